// The run as a Chrome / Perfetto trace (trace-event JSON; open it in ui.perfetto.dev or
// chrome://tracing): one process per rank; on a "train" thread the steps and their phases; one
// thread per FSDP group with its forward, backward and recompute slices and its reshard, prefetch
// and finalize instants; every all-gather as an async slice from its issue to the moment its
// output was consumed or dropped (a prefetch's is named "prefetch all_gather G", with its issuer);
// memory as counter tracks (the rank's allocator bytes, the ledger by buffer kind, bytes of
// pending all-gathers). A step's failed run (recovery) stays in place, closed by "recovered".
#pragma once

#include "harness/run/run_record.h"
#include "harness/scenario/scenario.h"

#include <nlohmann/json.hpp>

namespace shardfuzz::harness {

// {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}. Events recorded without a
// time (a trace read back from JSON) are placed 1 us apart in order.
nlohmann::json perfetto_trace(const Scenario& scenario, const RunRecord& run);

}  // namespace shardfuzz::harness
