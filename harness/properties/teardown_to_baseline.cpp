// Property 3: teardown returns every rank to its pre-model allocator baseline, exactly.
#include "harness/properties/property.h"

namespace shardfuzz::harness {

Verdict check_teardown_to_baseline(const Scenario&, const RunRecord& run) {
  if (!run.observed.baseline)
    return {"teardown_to_baseline", true, true, "the " + run.backend + " backend has no pre-model baseline"};
  for (const RankRecord& r : run.ranks)
    if (r.teardown_bytes != r.baseline_bytes)
      return {"teardown_to_baseline", false, false,
              "rank " + std::to_string(r.rank) + ": " + std::to_string(r.teardown_bytes - r.baseline_bytes) +
                  " bytes still allocated after teardown (baseline " + std::to_string(r.baseline_bytes) + ")"};
  return {"teardown_to_baseline", true, false, "every rank back to its baseline"};
}

}  // namespace shardfuzz::harness
