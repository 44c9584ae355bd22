// Semantics profiles: the version differences of upstream FSDP2 (and of the torch pieces around it
// that change what FSDP2 sees: activation checkpointing, the model's MoE loop), each a named switch
// citing where upstream changed, plus named injected defects that no released version has in that
// form but that model a documented failure class (bug-zoo.md). The runtime and the model builder
// consult only these switches.
//
// A profile is named "base", then any "+switch" (turned on) and "~switch" (set as strict has it),
// e.g. "strict+experts_skip_empty" or "torch-2.9~post_forward_reshards_during_backward". A finding is
// blamed on the switch whose removal makes it pass, and harness/zoo's table names its bug-zoo row.
#pragma once

#include <string>
#include <vector>

namespace shardfuzz::semantics {

struct Profile {
  std::string name;  // as given: "torch-2.9~post_forward_reshards_during_backward"
  std::string base;  // its base: "torch-2.9"

  // --- upstream behaviour, per version ---------------------------------------------------------

  // FSDPParamGroup.post_forward reshards and appends to post_forward_order even while the autograd
  // engine runs (AC recompute). torch <= 2.9; removed by the is_bw() guard of pytorch PR #164009
  // ("[FSDP2] support AC(FSDP) for torchtitan's MOE", motivated by torchtitan#1624). This is the
  // seed leak: the recompute's extra index makes the implicit backward prefetch target a group that
  // already finished backward. Under reentrant AC the same index is what pytorch#169349 reports.
  bool post_forward_reshards_during_backward = false;

  // Lazy init clamps the root's reshard_after_forward to False whatever the user passed, an int too
  // (post_forward_mesh_info = None; _fsdp_state.py before PR #155319, torch <= 2.7): the root's parameters stay
  // unsharded after every forward (pytorch#154655; a root run under no_grad, #149029).
  bool root_never_reshards_after_forward = false;

  // At world size 1, unshard() wraps one persistent all-gather buffer per group instead of
  // allocating a flat output per unshard (torch 2.11 as measured on the GPU machine; older code
  // allocated each time). Pending all-gathers then show in the ledger but cost no bytes.
  bool world1_persistent_all_gather_buffer = false;

  // torch.utils.checkpoint(use_reentrant=True): CheckpointFunction's output requires grad only if
  // one of its tensor inputs does, so a region whose input needs no grad (a trainable block or LoRA
  // adapters behind frozen layers) gets no backward at all and its parameters no gradient (torch
  // warns "None of the inputs have requires_grad=True"). Every torch version; HF works around it
  // with enable_input_require_grads. (torchforge#592's adapters without grads is this class.)
  bool reentrant_checkpoint_needs_input_grad = false;

  // finalize_backward and the post_forward_order reset run only when is_last_backward is True
  // (_root_post_backward_final_callback, every version): with set_is_last_backward(False)
  // (gradient accumulation, pipeline parallel) a prefetch nobody consumed and the stale
  // post_forward_order entries survive into the next backward.
  bool stale_state_survives_non_last_backward = false;

  // HSDP with reduce_dtype != the parameters' dtype: the all-reduced reduce-scatter output is a
  // buffer of its own (the sharded gradient is a cast copy), and each group's AllReduceState keeps
  // it until that group's finalize_backward, so one such buffer per layer lives until the end of
  // backward (torch <= 2.11; pytorch PR #179443 moved the state to the shared comm context, so each
  // post_backward frees the previous group's).
  bool all_reduce_state_per_group = false;

  // --- strict: our corrected scheduler ---------------------------------------------------------

  // strict: _prefetch_unshard skips a target that already ran post_backward in this backward, or
  // that registered no pre-backward hook in its last forward (it will never consume the
  // all-gather: frozen prefix, inputs and outputs without grad). Upstream has no such guard
  // (_backward_prefetch, newest acf70b43), so it relies on finalize_backward to drop the buffer.
  bool prefetch_skips_groups_without_pending_backward = false;

  // strict: at every post_backward, drop any pending all-gather held by a group that already
  // finished backward or will not run backward, instead of waiting for finalize_backward.
  bool free_unconsumed_all_gather_at_post_backward = false;

  // strict: when an AC recompute reaches a module whose group already finished this backward (the
  // module runs in several forwards of one backward), the module takes the full forward path, so
  // its hooks register again and the backward of that use reshards it. Upstream's _pre_forward
  // returns early in PRE_BACKWARD: under reentrant AC the re-gathered params then stay unsharded
  // through the rest of backward (the catch-all skips a group already in POST_BACKWARD).
  bool recompute_of_finished_group_takes_forward_path = false;

  // --- injected defects (no upstream version has them in this form) ----------------------------

  // The MoE experts loop skips experts that received no token (HuggingFace Mixtral's
  // `if top_x.shape[0] == 0: continue`): with expert parallelism a rank whose local experts get no
  // token produces no gradient for them and runs a different sequence of collectives — the
  // "parameters used differently across ranks" hang of pytorch#158719 (FSDP2 assumes SPMD).
  bool experts_skip_empty = false;

  // FSDP's per-group autograd glue keeps a strong reference back to the group's unsharded
  // parameters (the reference-cycle class of pytorch PR #139650 / #173415, which leaks while gc is
  // off): after teardown the group's all-gathered storage is never returned.
  bool group_reference_cycle = false;

  // Mixed-precision preparation upcasts every parameter of a low-precision model to float32,
  // frozen ones included (accelerate before PR #3848, huggingface/accelerate#3844): FSDP2 + LoRA
  // then stores the frozen base at twice its bytes. The fixed preparation upcasts only parameters
  // that require grad (FSDP2 needs a uniform dtype among those).
  bool upcast_frozen_params = false;

  // Builds the profile "base[+switch|~switch]...". Throws std::invalid_argument naming the
  // unknown base or switch and listing the known ones.
  static Profile named(const std::string& name);
  static std::vector<std::string> names();  // the bases: torch-2.7, torch-2.9, torch-2.11, strict

  // The registry of switches by name (which bug-zoo rows each reproduces is harness/zoo's table).
  struct Switch {
    const char* name;
    bool Profile::*flag;
  };
  static const std::vector<Switch>& switches();
  // The switches on in this profile that `strict` does not have, i.e. the candidates to blame.
  std::vector<const Switch*> deviations_from_strict() const;
  // Composition as values: this profile with one switch turned on ("torch-2.9+switch"), or set as
  // strict has it ("torch-2.9~switch"; off for every defect, on for strict's own corrections). The
  // result's name is what named() reads back into the same profile: named(p.with(s).name) == p.with(s).
  Profile with(const Switch& s) const;
  Profile without(const Switch& s) const;

  // Field for field: the name, the base and every switch.
  bool operator==(const Profile& other) const;
  bool operator!=(const Profile& other) const { return !(*this == other); }
};

}  // namespace shardfuzz::semantics
