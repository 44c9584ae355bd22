// One rank's run of a scenario, shared by the backends that host ranks: the threads backend runs it
// on each thread of a ThreadWorld, the process backend once in each rank process. It applies the
// rank's planned faults, builds the meshes and the model on the probe's device, wraps it, trains
// the steps (recovering from recoverable faults when the run allows it) and fills the rank's
// RankRecord. It sits in backends/, not threads/: every native backend (threads, process, nccl)
// runs its ranks through it, and a sibling folder's internals would tie process/ to threads/.
#pragma once

#include "harness/run/run_record.h"
#include "harness/scenario/scenario.h"
#include "harness/backends/run_options.h"
#include "runtime/comm/communicator.h"
#include "runtime/memory/probe.h"

#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace shardfuzz::harness {

// What the ranks of one run share: the scenario and options, the memory probe, when the run
// started, and the run-wide record (run.ranks sized to the world; fired faults and rank 0's
// resident set are written under `mu`).
struct RankRunShared {
  const Scenario& scenario;
  const RunOptions& options;
  memory::Probe probe;
  RunRecord& run;
  std::mutex& mu;
  std::chrono::steady_clock::time_point t0;
};

// The probe for options.device, refusing (std::invalid_argument naming the field) what it cannot
// run: several ranks of one process on one CUDA device (ranks_share_a_process, docs/gpu-path.md),
// and oom faults off the CPU.
// `warm`: as memory::Probe::cuda (false: only check, from a launcher).
memory::Probe rank_probe(const Scenario& scenario, const RunOptions& options, bool ranks_share_a_process,
                         bool warm = true);

// Runs rank world->global_rank() into run.ranks[rank]; throws what the rank failed with.
void run_rank(const RankRunShared& shared, const std::shared_ptr<comm::Communicator>& world);

// "crash", "out_of_memory", "deadline", "aborted", ... (RunRecord::error_kind).
std::string error_kind(const std::exception_ptr& error);

struct RankFailure {
  int rank = 0;
  std::string error;
  std::string kind;  // error_kind
};
// Each failed rank's error into its RankRecord, and the run's root failure: the first that is
// not an abort another rank caused.
void set_root_failure(RunRecord& run, const std::vector<RankFailure>& failures);

}  // namespace shardfuzz::harness
