// The scenarios of the recorded FSDP2 traces (shared/conformance/record.py), rebuilt on the native
// runtime: the same model (D=16, E=2 experts, H=8, 4 tokens, loss = sum of the output), the same
// wrapping order (checkpoint, nested experts, block, out, root) and explicit prefetch lists.
#pragma once

#include "runtime/ac/checkpoint.h"
#include "runtime/fsdp/profile.h"
#include "runtime/memory/timeline.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::harness {

struct TraceScenario {
  std::string name;
  int blocks = 1;
  ac::CheckpointMode ac = ac::CheckpointMode::None;
  bool gated = false;
  bool lora = false;
  std::optional<std::vector<int>> nested;  // default: every block
  bool wrap_out = true;
  std::string explicit_prefetch;  // "", "torchtitan", "empty", "self_experts"
  bool frozen_block0 = false;
  bool block_reshard_after_forward = true;
  int steps = 2;

  // Rejects unknown keys and bad values with the JSON path ("scenario.blocks") in the message.
  static TraceScenario from_json(const nlohmann::json& j);
  bool is_nested(int block) const;
};

struct TraceRun {
  std::vector<std::vector<memory::TimelineEvent>> steps;  // rank 0's fsdp events per step
  std::string error;                                      // empty when every rank succeeded
};

// Runs the scenario on the ThreadWorld backend at `world_size` under `profile`.
TraceRun run_trace_scenario(const TraceScenario& scenario, int world_size, const fsdp::Profile& profile);

}  // namespace shardfuzz::harness
