// Property 6: liveness — the run completed on every rank.
#include "harness/properties/planned_faults.h"
#include "harness/properties/property.h"

namespace shardfuzz::harness {

Verdict check_liveness(const Scenario& sc, const RunRecord& run) {
  if (run.ok()) return {"liveness", true, false, "every rank completed"};
  // The plan stopped the run: faults_detected judges how.
  for (const FiredFault& f : run.fired_faults)
    if (must_be_detected(sc, run, f))
      return {"liveness", true, false,
              "stopped by the planned " + f.kind + " of rank " + std::to_string(f.rank) + ", as planned (" +
                  run.error_kind + ": " + run.error + ")"};
  return {"liveness", false, false, run.error_kind + ": " + run.error};
}

}  // namespace shardfuzz::harness
