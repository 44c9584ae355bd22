// `shardfuzz run --json`: one run as JSON — the scenario, the error, the backend, every verdict,
// every rank's record (timeline, losses, shards, recoveries; harness/run_record_json.h) and the
// faults that fired.
#pragma once

#include "harness/properties/property.h"
#include "harness/run/run_record.h"
#include "harness/scenario/scenario.h"

#include <nlohmann/json.hpp>

#include <vector>

namespace shardfuzz::harness {

nlohmann::json run_json(const Scenario& scenario, const RunRecord& run, const std::vector<Verdict>& verdicts);

}  // namespace shardfuzz::harness
