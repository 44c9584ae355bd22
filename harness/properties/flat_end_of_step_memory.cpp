// Property 2: end-of-step memory is flat across steps from step 2 on (step 1 may create optimizer
// state and other one-time buffers).
#include "harness/properties/property.h"

#include <cstdlib>

namespace shardfuzz::harness {

Verdict check_flat_end_of_step_memory(const Scenario& sc, const RunRecord& run) {
  if (sc.steps < 3) return {"flat_end_of_step_memory", true, true, "needs 3 steps or more"};
  if (!run.observed.allocator)
    return {"flat_end_of_step_memory", true, true, "the " + run.backend + " backend recorded no allocator bytes here"};
  for (const RankRecord& r : run.ranks) {
    int64_t first = 0;
    bool have = false;
    for (const auto& e : r.timeline) {
      if (e.category != "train" || e.event != "step_end" || e.step < 1) continue;
      if (!have) {
        first = e.allocated_bytes;
        have = true;
        continue;
      }
      if (std::llabs(e.allocated_bytes - first) > Tolerances::kStepDriftBytes)
        return {"flat_end_of_step_memory", false, false,
                "rank " + std::to_string(r.rank) + " step " + std::to_string(e.step + 1) + ": " +
                    std::to_string(e.allocated_bytes) + " bytes at step end vs " + std::to_string(first) +
                    " at the end of step 2 (drift " + std::to_string(e.allocated_bytes - first) + " bytes, tolerance " +
                    std::to_string(Tolerances::kStepDriftBytes) + ")"};
    }
  }
  return {"flat_end_of_step_memory", true, false, "flat"};
}

}  // namespace shardfuzz::harness
