// ModelScenario: the model family of the recorded FSDP2 traces (shared/conformance/record.py) and
// of the runtime's own tests, as plain data — `layers.i` blocks (attention stand-in + MoE with an
// `experts` submodule, or a dense MLP), an `out` head, the wrapping (checkpoint, nested experts,
// block, out, root) and explicit prefetch lists. The full fuzzable Scenario builds on it.
#pragma once

#include "runtime/ac/checkpoint.h"
#include "runtime/train/optimizer.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::harness {

struct ModelScenario {
  std::string name;
  int blocks = 1;
  ac::CheckpointMode ac = ac::CheckpointMode::None;
  int ac_every = 1;  // layer-level selective AC: checkpoint every k-th block
  bool moe = true;
  bool gated = false;
  std::optional<std::vector<int>> nested;  // blocks whose experts get their own fully_shard; default all
  bool wrap_out = true;
  std::string explicit_prefetch;  // "", "torchtitan", "empty", "self_experts"
  bool frozen_block0 = false;
  bool block_reshard_after_forward = true;
  int block_reshard_after_forward_ranks = 0;  // > 0: int reshard_after_forward (keep a 1/N slice)
  int steps = 2;

  // Beyond what the traces vary (their defaults are record.py's).
  int64_t dim = 16;
  int64_t experts = 2;
  int64_t hidden = 8;
  int64_t tokens = 4;
  uint64_t seed = 0;
  bool input_per_rank = false;  // record.py feeds every rank (and step) the same input
  int expert_shard_size = 0;    // 0: experts shard over the world; k: HSDP, ep = world/k x dp_mod_ep = k
  std::optional<train::OptimizerConfig> optimizer;  // none: forward/backward only, as the traces

  // The "scenario" object of a recorded trace. Rejects unknown keys and bad values, naming the
  // JSON path ("scenario.blocks").
  static ModelScenario from_trace_json(const nlohmann::json& j);
  bool is_nested(int block) const;
  bool is_checkpointed(int block) const;
};

}  // namespace shardfuzz::harness
