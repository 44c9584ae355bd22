// Property: reshard_after_forward means what it says. At the end of every forward (the training
// forwards and the no_grad evaluation forward), every group asked to reshard after forward (True,
// an int N > 1, or "auto" on a non-root) holds no unsharded parameters; a root asked explicitly
// for True included (bug zoo rows 2 and 3: the flag ignored on roots, and under no_grad).
#include "harness/properties/property.h"

#include <algorithm>

namespace shardfuzz::harness {
namespace {

bool asked_to_reshard(const std::string& path, const ShardSpec& spec) {
  using Kind = fsdp::ReshardAfterForward::Kind;
  switch (spec.reshard_after_forward.kind) {
    case Kind::True: return true;
    case Kind::False: return false;
    case Kind::Int: return spec.reshard_after_forward.n != 1;
    case Kind::Auto: return !path.empty();  // upstream: the root's None means False
  }
  return false;
}

}  // namespace

Verdict check_reshard_after_forward_honoured(const Scenario& sc, const RunRecord& run) {
  // The first violation after a training forward and after the no_grad evaluation forward; the
  // latter is reported when both exist (the more specific case: a forward no backward follows).
  std::string training, evaluation;
  for (const RankRecord& r : run.ranks) {
    for (int step = 0; step < sc.steps; ++step) {
      for (const auto& e : r.events_of_step(step, "train")) {
        if (e.event != "forward_end" && e.event != "eval_forward_end") continue;
        std::string& slot = e.event == "eval_forward_end" ? evaluation : training;
        if (!slot.empty()) continue;
        for (const auto& [path, spec] : sc.fully_shard) {
          const std::string group = path.empty() ? "root" : path;
          if (!asked_to_reshard(path, spec)) continue;
          if (std::find(e.unsharded.begin(), e.unsharded.end(), group) == e.unsharded.end()) continue;
          const std::string which = e.event == "eval_forward_end" ? "the no_grad evaluation forward" : "the forward";
          slot = "rank " + std::to_string(r.rank) + " step " + std::to_string(step + 1) + ": after " + which +
                 ", group " + group + " (reshard_after_forward=" + spec.reshard_after_forward.describe() +
                 (path.empty() ? ", the root" : "") + ") still holds unsharded parameters";
          break;
        }
      }
    }
  }
  if (!evaluation.empty() || !training.empty())
    return {"reshard_after_forward_honoured", false, false, evaluation.empty() ? training : evaluation};
  return {"reshard_after_forward_honoured", true, false, "every group asked to reshard after forward did"};
}

}  // namespace shardfuzz::harness
