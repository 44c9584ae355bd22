// One rank's RankRecord (and the faults that fired on it) as JSON: how a rank process hands its
// record to whoever assembles the run (harness/backends/process). Lossless: shard values travel as the
// doubles that hold them exactly, timeline events in TimelineEvent::to_json's form.
#pragma once

#include "harness/run/run_record.h"

#include <nlohmann/json.hpp>

#include <vector>

namespace shardfuzz::harness {

nlohmann::json to_json(const RankRecord& record);
// std::invalid_argument naming the field on malformed input.
RankRecord rank_record_from_json(const nlohmann::json& json);

// {"decisions", "switches": [{"decision", "candidate"}], "clock_ms", "fingerprint": hex}: the
// switches in a scenario's "schedule" form, so they paste into a reproducer.
nlohmann::json to_json(const comm::ScheduleRecord& record);
comm::ScheduleRecord schedule_record_from_json(const nlohmann::json& json);

nlohmann::json to_json(const FiredFault& fault);
FiredFault fired_fault_from_json(const nlohmann::json& json);

}  // namespace shardfuzz::harness
