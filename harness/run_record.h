// RunRecord: what a backend returns for one scenario run — per rank, the timeline, losses, final
// local shards, and allocator bytes before the model existed and after teardown; plus the root
// failure if any rank failed. Properties and reports read only this.
#pragma once

#include "runtime/memory/timeline.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace shardfuzz::harness {

struct ShardRecord {
  std::string group;  // the FSDP group holding it
  std::string fqn;
  int shard_rank = 0;
  int shard_size = 1;
  int shard_dim = 0;
  // Expert-parallel experts hold rows [full_begin, full_begin + full_rows) of the full tensor's
  // dim 0 before FSDP shards them (full_rows < 0: the whole tensor).
  int64_t full_begin = 0;
  int64_t full_rows = -1;
  at::Tensor local;  // un-padded local shard after the last step
  int64_t padded_bytes = 0;  // this rank's padded shard, in its stored dtype
  int64_t unsharded_bytes = 0;  // the whole all-gather output of this parameter, in param_dtype
  bool requires_grad = true;
};

struct RankRecord {
  int rank = 0;
  std::vector<memory::TimelineEvent> timeline;
  std::vector<double> losses;  // per step
  std::vector<ShardRecord> shards;
  int64_t baseline_bytes = 0;  // allocator bytes before the model was built
  int64_t teardown_bytes = 0;  // after model, optimizer and runtime were destroyed
  int64_t training_peak_bytes = 0;  // allocator peak from the end of wrapping to teardown, above the baseline
  std::vector<memory::TimelineEvent> events_of_step(int step, const std::string& category = "fsdp") const;
};

struct RunRecord {
  std::vector<RankRecord> ranks;
  std::string error;        // the root failure ("rank R: message"), empty when every rank succeeded
  std::string error_kind;   // "collective_mismatch", "deadline", "aborted", "exception" or empty
  bool ok() const { return error.empty(); }
};

// LibTorch appends a C++ backtrace to its messages; the first lines say what happened.
std::string without_backtrace(const std::string& message);

}  // namespace shardfuzz::harness
