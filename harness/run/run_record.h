// RunRecord: what a backend returns for one scenario run — per rank, the timeline, losses, final
// local shards, and allocator bytes before the model existed and after teardown; plus the root
// failure if any rank failed. Properties and reports read only this.
#pragma once

#include "runtime/comm/schedule.h"
#include "runtime/memory/timeline.h"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
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

// A step this rank undid and ran again after a recoverable fault (train/recovery.h): what it
// caught, when, and the runtime right after its reset against the failed run's start.
struct RecoveryRecord {
  int step = 0;
  int attempt = 0;  // 0: the step's first run failed
  std::string error;  // what this rank caught
  std::string error_kind;
  double caught_at_seconds = 0;     // since the run's start
  double recovered_at_seconds = 0;  // when every rank had met again
  int64_t bytes_at_step_begin = 0, bytes_after_reset = 0;  // allocator bytes above the rank's baseline
  memory::KindTotals ledger_at_step_begin{}, ledger_after_reset{};
  std::vector<std::string> unsharded_after_reset, pending_all_gather_after_reset;  // group names
  std::vector<memory::TimelineEvent> events;  // the failed run, its reset and "recovered"
};

struct RankRecord {
  int rank = 0;
  std::vector<memory::TimelineEvent> timeline;
  std::vector<double> losses;  // per step
  std::vector<int64_t> step_end_bytes;  // allocator bytes above the baseline at each step's end
  std::vector<ShardRecord> shards;
  int64_t baseline_bytes = 0;  // allocator bytes before the model was built
  int64_t teardown_bytes = 0;  // after model, optimizer and runtime were destroyed
  int64_t training_peak_bytes = 0;  // allocator peak from the end of wrapping to teardown, above the baseline
  // The probe's peak minus its current bytes read right after training's reset_peak: 0 when the
  // peak restarted there (what every peak figure above relies on).
  int64_t peak_above_current_at_reset = 0;
  std::vector<RecoveryRecord> recoveries;  // in order; the timeline holds only each step's last run
  // On a device: its caching allocator's snapshot (memory::device_snapshot) at the end of the last
  // step, or where the rank failed; null on the CPU.
  nlohmann::json device_snapshot;
  std::string error;                // what this rank failed with (empty: it completed)
  // Collectives it entered after its world was aborted for good (comm::RankOutcome); -1: the
  // backend does not count them. A correct world fails each, so a rank that completed entered 0.
  int collectives_after_abort = -1;
  double failed_at_seconds = -1;    // since the run's start, when it failed (-1: it did not)
  std::vector<memory::TimelineEvent> events_of_step(int step, memory::Category category = memory::Category::Fsdp) const;
};

// What a backend could observe. The native runtime sees everything. PyTorch's FSDP2 (the torch
// backend) keeps no ledger of buffer kinds, has an allocator probe on CUDA only, outlives the run
// in a long-lived worker (no pre-model baseline), and draws its own weights and inputs (nothing to
// compare with the native reference). Properties that need what was not observed are skipped,
// saying so.
struct Observed {
  bool allocator = true;     // TimelineEvent::allocated_bytes
  bool ledger = true;        // TimelineEvent::ledger and unsharded_grad_bytes
  bool baseline = true;      // RankRecord baseline, teardown and training peak bytes
  bool shard_values = true;  // ShardRecord::local holds values the native reference reproduces
  bool values = true;        // tensors held values (false: a shape-only run, sizes and bytes only)
  bool checkpoints = true;   // "ac" events: what each activation-checkpoint region ran (runtime/ac)
};

// A planned fault that fired (Scenario::faults), when and where.
struct FiredFault {
  int fault = 0;  // index into Scenario::faults
  int rank = 0;
  std::string kind;
  std::string group;  // the communicator group and op it hit (an exception: the module and pass)
  std::string op;
  double at_seconds = 0;  // since the run's start
  int step = -1;          // the training step it fired in (-1: not known, a collective fault)
};

struct Reference;

struct RunRecord {
  std::string backend = "threads";
  std::string device = "cpu";  // where the ranks' tensors lived: "cpu", "meta" (shape-only) or a CUDA device ("cuda", "cuda:1")
  Observed observed;
  double seconds = 0;  // the run itself, as the backend timed it (torch: the slowest rank's run)
  int deadline_ms = 0;  // the collective deadline the run had (0: unknown)
  // Threads backend: what the schedule did (scheduled == false: the OS ran the threads, or another
  // backend ran the ranks). Its fingerprint says whether two runs interleaved their ranks alike.
  comm::ScheduleRecord schedule;
  std::vector<FiredFault> fired_faults;
  // Whether ranks recovered from recoverable faults (oom, exception) and ran the step again; when
  // false those faults stop the run like the others.
  bool recovery = false;
  std::vector<RankRecord> ranks;
  std::vector<int64_t> host_rss_bytes;  // the process's resident set at each of rank 0's step ends (threads)
  std::string error;        // the root failure ("rank R: message"), empty when every rank succeeded
  std::string error_kind;   // "collective_mismatch", "deadline", "aborted", "exception" or empty
  // The scenario's unsharded reference (harness/reference), attached by the native backends as part
  // of the run (RunOptions::reference); absent: parity is not judged.
  std::shared_ptr<const Reference> reference;
  bool ok() const { return error.empty(); }
};

// LibTorch appends a C++ backtrace to its messages; the first lines say what happened.
std::string without_backtrace(const std::string& message);

}  // namespace shardfuzz::harness
