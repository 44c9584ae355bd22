// Semantics profiles: the version differences of upstream FSDP2 (and our corrected scheduler) as
// named switches, each citing where upstream changed. The scheduler consults only these switches.
#pragma once

#include <string>
#include <vector>

namespace shardfuzz::fsdp {

struct Profile {
  std::string name;

  // FSDPParamGroup.post_forward reshards and appends to post_forward_order even while the autograd
  // engine runs (AC recompute). torch <= 2.9; removed by the is_bw() guard of pytorch PR #164009
  // ("[FSDP2] support AC(FSDP) for torchtitan's MOE", motivated by torchtitan#1624). This is the
  // seed leak: the recompute's extra index makes the implicit backward prefetch target a group that
  // already finished backward.
  bool post_forward_reshards_during_backward = false;

  // At world size 1, unshard() wraps one persistent all-gather buffer per group instead of
  // allocating a flat output per unshard (torch 2.11 as measured on the GPU machine; older code
  // allocated each time). Pending all-gathers then show in the ledger but cost no bytes.
  bool world1_persistent_all_gather_buffer = false;

  // strict: _prefetch_unshard skips a target that already ran post_backward in this backward, or
  // that registered no pre-backward hook in its last forward (it will never consume the
  // all-gather: frozen prefix, inputs and outputs without grad). Upstream has no such guard
  // (_backward_prefetch, newest acf70b43), so it relies on finalize_backward to drop the buffer.
  bool prefetch_skips_groups_without_pending_backward = false;

  // strict: at every post_backward, drop any pending all-gather held by a group that already
  // finished backward or will not run backward, instead of waiting for finalize_backward.
  bool free_unconsumed_all_gather_at_post_backward = false;

  static Profile named(const std::string& name);  // throws std::invalid_argument naming it
  static std::vector<std::string> names();        // torch-2.9, torch-2.11, strict
};

}  // namespace shardfuzz::fsdp
