// Property 6: liveness — the run completed on every rank.
#include "harness/properties/property.h"

namespace shardfuzz::harness {

Verdict check_liveness(const Scenario&, const RunRecord& run) {
  if (run.ok()) return {"liveness", true, false, "every rank completed"};
  return {"liveness", false, false, run.error_kind + ": " + run.error};
}

}  // namespace shardfuzz::harness
