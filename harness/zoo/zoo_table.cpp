// The zoo table and its discriminators over the failing run.
#include "harness/zoo/zoo_table.h"

#include <algorithm>

namespace shardfuzz::harness::zoo {
namespace {

using memory::Event;
using D = Discriminator;

bool has_reentrant_block(const Scenario& sc) {
  return std::any_of(sc.blocks.begin(), sc.blocks.end(),
                     [](const BlockSpec& b) { return b.ac == ac::CheckpointMode::Reentrant; });
}

// The root asked to reshard after forward (True, or an int N > 1) and still unsharded when an
// evaluation forward ended.
bool root_unsharded_after_eval_forward(const Scenario& sc, const RunRecord& run) {
  const auto root = sc.fully_shard.find("");
  if (root == sc.fully_shard.end()) return false;
  const auto& raf = root->second.reshard_after_forward;
  using Kind = fsdp::ReshardAfterForward::Kind;
  if (raf.kind != Kind::True && !(raf.kind == Kind::Int && raf.n != 1)) return false;
  for (const RankRecord& r : run.ranks)
    for (const auto& e : r.timeline)
      if (e.event == Event::EvalForwardEnd && std::count(e.unsharded.begin(), e.unsharded.end(), "root")) return true;
  return false;
}

enum class StrayPrefetch { None, ForwardDuringRecompute, BackwardOfFinished, BackwardOfNeverBackward };

// How the first all-gather that nobody would consume was issued.
StrayPrefetch first_stray_prefetch(const RunRecord& run) {
  for (const RankRecord& r : run.ranks) {
    for (std::size_t k = 0; k < r.timeline.size(); ++k) {
      const auto& e = r.timeline[k];
      if (e.event != Event::Prefetch || e.skipped()) continue;
      const std::string target = e.prefetch_target().value_or("");
      const std::string pass = e.prefetch_pass().value_or("");
      const bool finished =
          std::find(e.finished_backward.begin(), e.finished_backward.end(), target) != e.finished_backward.end();
      if (pass == "forward" && finished) return StrayPrefetch::ForwardDuringRecompute;
      if (pass != "backward") continue;
      if (finished) return StrayPrefetch::BackwardOfFinished;
      // Never consumed if the target has no pre_backward later in this step's backward.
      bool consumed = false;
      for (std::size_t j = k + 1; j < r.timeline.size() && r.timeline[j].step == e.step; ++j) {
        const Event later = r.timeline[j].event;
        if (r.timeline[j].group == target && (later == Event::PreBackwardBegin || later == Event::PreBackwardEnd))
          consumed = true;
      }
      if (!consumed) return StrayPrefetch::BackwardOfNeverBackward;
    }
  }
  return StrayPrefetch::None;
}

bool holds(Discriminator d, const Scenario& sc, const RunRecord& run) {
  switch (d) {
    case D::Otherwise: return true;
    case D::ReentrantBlock: return has_reentrant_block(sc);
    case D::RootUnshardedAfterEvalForward: return root_unsharded_after_eval_forward(sc, run);
    case D::StrayForwardPrefetchInRecompute: return first_stray_prefetch(run) == StrayPrefetch::ForwardDuringRecompute;
    case D::StrayBackwardPrefetchOfNeverBackward:
      return first_stray_prefetch(run) == StrayPrefetch::BackwardOfNeverBackward;
  }
  return false;
}

constexpr const char* kSeedFix = "pytorch PR #164009 (is_bw guard), torchtitan#1624";
constexpr const char* kNoGuard = "upstream _backward_prefetch has no guard (newest acf70b43)";

}  // namespace

const std::vector<ZooRow>& zoo_table() {
  static const std::vector<ZooRow> table = {
      {"1", "post_forward_reshards_during_backward", D::ReentrantBlock, false, "pytorch#169349; fixed by pytorch PR #164009"},
      {"5", "post_forward_reshards_during_backward", D::Otherwise, false, kSeedFix},
      {"2", "root_never_reshards_after_forward", D::RootUnshardedAfterEvalForward, false, "pytorch#149029; pytorch PR #155319"},
      {"3", "root_never_reshards_after_forward", D::Otherwise, false, "pytorch#154655; pytorch PR #155319"},
      {"4", "experts_skip_empty", D::Otherwise, true, "pytorch#158719, PR #178861"},
      {"7", "all_reduce_state_per_group", D::Otherwise, false, "pytorch PR #179443 (and #179129)"},
      {"10", "group_reference_cycle", D::Otherwise, true, "pytorch PR #139650, #173415"},
      {"13", "upcast_frozen_params", D::Otherwise, true, "huggingface/accelerate#3844, fixed by PR #3848"},
      {"14", "reentrant_checkpoint_needs_input_grad", D::Otherwise, false,
       "torch.utils.checkpoint use_reentrant=True; meta-pytorch/torchforge#592"},
      {"S4", "stale_state_survives_non_last_backward", D::Otherwise, false,
       "_root_post_backward_final_callback gates finalize_backward on is_last_backward"},
      {"S6", "recompute_of_finished_group_takes_forward_path", D::Otherwise, false,
       "FSDPState._pre_forward returns early in PRE_BACKWARD"},
      {"S5", "prefetch_skips_groups_without_pending_backward", D::StrayForwardPrefetchInRecompute, false,
       "NeMo-Automodel #3373 (torch 2.13); upstream _backward_prefetch has no guard"},
      {"S3", "prefetch_skips_groups_without_pending_backward", D::StrayBackwardPrefetchOfNeverBackward, false, kNoGuard},
      {"S2", "prefetch_skips_groups_without_pending_backward", D::Otherwise, false, kNoGuard},
      {"S5", "free_unconsumed_all_gather_at_post_backward", D::StrayForwardPrefetchInRecompute, false, kNoGuard},
      {"S3", "free_unconsumed_all_gather_at_post_backward", D::StrayBackwardPrefetchOfNeverBackward, false, kNoGuard},
      {"S2", "free_unconsumed_all_gather_at_post_backward", D::Otherwise, false, kNoGuard},
  };
  return table;
}

const ZooRow* row_for(const std::string& switch_name, const Scenario& sc, const RunRecord& run) {
  for (const ZooRow& row : zoo_table())
    if (switch_name == row.switch_name && holds(row.when, sc, run)) return &row;
  return nullptr;
}

}  // namespace shardfuzz::harness::zoo
