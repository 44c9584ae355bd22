// Conformance replay: runs a recorded FSDP2 trace's scenario on the native runtime under the
// trace's profile and reports the first divergence — event, group, detail, or the pending
// all-gather / unsharded sets after the event.
#pragma once

#include "harness/run/run_record.h"
#include "runtime/memory/timeline.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace shardfuzz::harness {

struct ConformanceResult {
  std::string file;
  bool ok = false;
  std::size_t events = 0;  // events compared
  std::string message;     // the first divergence, or the error
};

// Compares a recorded trace (parsed JSON) with rank 0 of a native run of it.
ConformanceResult compare_trace(const nlohmann::json& trace, const RunRecord& run);
ConformanceResult replay_trace_file(const std::string& path);
// Every *.json in `dir`, sorted by name. Throws std::runtime_error when the folder is missing.
std::vector<ConformanceResult> replay_trace_dir(const std::string& dir);

std::string describe(const memory::TimelineEvent& e);
std::string describe_recorded(const nlohmann::json& e);

}  // namespace shardfuzz::harness
