// Blame by flipping one switch at a time; rows from the switch and the minimal case's shape.
#include "harness/zoo/blame.h"

#include "harness/properties/property.h"
#include "harness/backends/threads/threads_backend.h"
#include "runtime/fsdp/profile.h"

#include <algorithm>

namespace shardfuzz::harness::zoo {
namespace {

bool any_block(const Scenario& sc, ac::CheckpointMode mode) {
  return std::any_of(sc.blocks.begin(), sc.blocks.end(), [&](const BlockSpec& b) { return b.ac == mode; });
}

// How the first all-gather that nobody would consume was issued, read off the failing run.
enum class StrayPrefetch { None, ForwardDuringRecompute, BackwardOfFinished, BackwardOfNeverBackward };

StrayPrefetch first_stray_prefetch(const RunRecord& run) {
  for (const RankRecord& r : run.ranks) {
    for (std::size_t k = 0; k < r.timeline.size(); ++k) {
      const auto& e = r.timeline[k];
      if (e.event != "prefetch" || e.detail.contains("skipped")) continue;
      const std::string target = e.detail.value("target", "");
      const std::string pass = e.detail.value("pass", "");
      const bool finished =
          std::find(e.finished_backward.begin(), e.finished_backward.end(), target) != e.finished_backward.end();
      if (pass == "forward" && finished) return StrayPrefetch::ForwardDuringRecompute;
      if (pass != "backward") continue;
      if (finished) return StrayPrefetch::BackwardOfFinished;
      // Never consumed if the target has no pre_backward later in this step's backward.
      bool consumed = false;
      for (std::size_t j = k + 1; j < r.timeline.size() && r.timeline[j].step == e.step; ++j)
        if (r.timeline[j].group == target && r.timeline[j].event.rfind("pre_backward", 0) == 0) consumed = true;
      if (!consumed) return StrayPrefetch::BackwardOfNeverBackward;
    }
  }
  return StrayPrefetch::None;
}

bool failed_at_eval_forward(const Scenario& sc, const RunRecord& run) {
  const Verdict v = check_reshard_after_forward_honoured(sc, run);
  return !v.ok && v.message.find("no_grad evaluation forward") != std::string::npos;
}

}  // namespace

std::string row_of(const std::string& name, const Scenario& sc, const RunRecord& run) {
  if (name == "post_forward_reshards_during_backward") return any_block(sc, ac::CheckpointMode::Reentrant) ? "1" : "5";
  if (name == "root_never_reshards_after_forward") return failed_at_eval_forward(sc, run) ? "2" : "3";
  if (name == "reentrant_checkpoint_needs_input_grad") return "14";
  if (name == "experts_skip_empty") return "4";
  if (name == "group_reference_cycle") return "10";
  if (name == "all_reduce_state_per_group") return "7";
  if (name == "upcast_frozen_params") return "13";
  if (name == "stale_state_survives_non_last_backward") return "S4";
  if (name == "recompute_of_finished_group_takes_forward_path") return "S6";
  if (name == "prefetch_skips_groups_without_pending_backward" ||
      name == "free_unconsumed_all_gather_at_post_backward") {
    switch (first_stray_prefetch(run)) {
      case StrayPrefetch::ForwardDuringRecompute: return "S5";
      case StrayPrefetch::BackwardOfNeverBackward: return "S3";
      case StrayPrefetch::BackwardOfFinished:
      case StrayPrefetch::None: return "S2";
    }
  }
  return "?";
}

std::vector<Blame> blame(const Scenario& sc, const RunRecord* failing_run) {
  const fsdp::Profile profile = fsdp::Profile::named(sc.profile);
  RunRecord own;
  if (!failing_run) {
    own = run_threads(sc);
    if (!first_failure(check_properties(sc, own))) return {};
  }
  const RunRecord& failing = failing_run ? *failing_run : own;
  std::vector<Blame> out;
  for (const fsdp::Profile::Switch* s : profile.deviations_from_strict()) {
    Scenario flipped = sc;
    flipped.profile = profile.without(*s);
    const RunRecord run = run_threads(flipped);
    if (first_failure(check_properties(flipped, run))) continue;
    out.push_back({s->name, row_of(s->name, sc, failing), s->injected, s->upstream});
  }
  return out;
}

std::string describe(const std::vector<Blame>& blames) {
  if (blames.empty()) return "unattributed";
  std::string out;
  for (const auto& b : blames) {
    if (!out.empty()) out += ", ";
    out += "row " + b.row + " (" + b.switch_name + (b.injected ? ", injected" : "") + ")";
  }
  return out;
}

}  // namespace shardfuzz::harness::zoo
