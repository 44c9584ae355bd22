// What a planned fault that fired must do to the run, shared by liveness and faults_detected.
#pragma once

#include "harness/run/run_record.h"
#include "harness/scenario/scenario.h"

namespace shardfuzz::harness {

// Whether the fired fault must stop the run and be detected by the peers
// (FaultSpec::must_be_detected), except for a synchronized stall: when every rank of the world
// hangs (or straggles by the same delay) at the same collective, all arrive together, the
// collective completes and there is no peer left waiting to notice — nothing to detect.
bool must_be_detected(const Scenario& sc, const RunRecord& run, const FiredFault& fired);

}  // namespace shardfuzz::harness
