// Runs a ModelScenario on the threads backend (ThreadWorld: N ranks as threads, collectives over
// shared memory) and returns what every rank saw: its timeline, losses, final local shards, and
// the allocator bytes before the model existed and after it was torn down.
#pragma once

#include "harness/model_scenario.h"
#include "runtime/fsdp/profile.h"
#include "runtime/memory/timeline.h"

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace shardfuzz::harness {

struct ShardRecord {
  std::string fqn;
  int shard_rank = 0;
  int shard_size = 1;
  int shard_dim = 0;
  at::Tensor local;  // un-padded local shard after the last step
};

struct RankRecord {
  int rank = 0;
  std::vector<memory::TimelineEvent> timeline;
  std::vector<double> losses;  // per step
  std::vector<ShardRecord> shards;
  int64_t baseline_bytes = 0;  // allocator bytes before the model was built
  int64_t teardown_bytes = 0;  // after model, optimizer and runtime were destroyed
  std::vector<memory::TimelineEvent> events_of_step(int step, const std::string& category = "fsdp") const;
};

struct RunRecord {
  std::vector<RankRecord> ranks;
  std::string error;  // the root failure ("rank R: message"), empty when every rank succeeded
  bool ok() const { return error.empty(); }
};

RunRecord run_on_threads(const ModelScenario& scenario, int world_size, const fsdp::Profile& profile,
                         std::chrono::milliseconds deadline = std::chrono::milliseconds(30000));

// LibTorch appends a C++ backtrace to its messages; the first lines say what happened.
std::string without_backtrace(const std::string& message);

}  // namespace shardfuzz::harness
