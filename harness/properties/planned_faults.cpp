// Planned faults' expectations (harness/properties/planned_faults.h).
#include "harness/properties/planned_faults.h"

#include <algorithm>

namespace shardfuzz::harness {
namespace {

bool same_stall(const CollectiveFault& a, const CollectiveFault& b) {
  return a.kind == b.kind && a.collective == b.collective && a.delay_ms == b.delay_ms;
}

bool synchronized_stall(const Scenario& sc, const RunRecord& run, const CollectiveFault& stall) {
  if (stall.kind != CollectiveFault::Kind::Hang && stall.kind != CollectiveFault::Kind::Straggler) return false;
  for (int rank = 0; rank < sc.world_size; ++rank) {
    const bool stalled = std::any_of(run.fired_faults.begin(), run.fired_faults.end(), [&](const FiredFault& f) {
      const CollectiveFault* c = sc.faults.at(static_cast<std::size_t>(f.fault)).at_collective();
      return f.rank == rank && c && same_stall(*c, stall);
    });
    if (!stalled) return false;
  }
  return true;
}

}  // namespace

bool must_be_detected(const Scenario& sc, const RunRecord& run, const FiredFault& fired) {
  const FaultSpec& spec = sc.faults.at(static_cast<std::size_t>(fired.fault));
  if (!spec.must_be_detected(run.deadline_ms, run.recovery)) return false;
  const CollectiveFault* c = spec.at_collective();
  return !(c && synchronized_stall(sc, run, *c));
}

}  // namespace shardfuzz::harness
