// Step recovery after a fault a rank can recover from (an allocation failure, an exception raised
// by the model): every rank undoes the step and runs it again, so training goes on as if it had
// not failed (torchft's report-error, reconfigure, retry; within one world).
//   1. The failing rank aborts the world (Communicator::abort_world): its peers' collectives fail
//      now instead of at the deadline, and they take the same path.
//   2. Every rank resets its runtime (fsdp::reset_after_fault) and puts back its checkpoint of the
//      step's start: local shards, sharded gradients, optimizer state.
//   3. Every rank meets the others (Communicator::recover_world), then runs the step again.
// A step commits only when every rank has finished it (a barrier on the world), so no rank can be
// a step ahead of a peer that fails. Nothing here is on unless the caller asks for it: the
// checkpoint is one copy of the rank's shards and optimizer state per step.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/fsdp/rank_runtime.h"
#include "runtime/memory/ledger.h"
#include "runtime/memory/timeline.h"
#include "runtime/nn/module.h"
#include "runtime/train/optimizer.h"

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace shardfuzz::fsdp {
class ParamGroup;
}

namespace shardfuzz::train {

// Whether a rank can recover from `error`: an allocation failure (c10::OutOfMemoryError), an
// exception the model raised, or the abort a peer's recoverable failure caused
// (CollectiveError::Kind::Aborted). Not: a collective's own failure (mismatch, deadline, invalid
// argument, injected), a crash, a broken invariant (std::logic_error) or another LibTorch error
// (a bug the retry would only repeat).
bool is_recoverable(const std::exception_ptr& error);

// A rank's training state at a step's start: its local shards, sharded gradients and optimizer
// state. The copies live in host memory (allocation rank -1: not the rank's device bytes), as
// torchft keeps its in-memory checkpoint.
class StepCheckpoint {
 public:
  StepCheckpoint(const std::vector<fsdp::ParamGroup*>& groups, const ShardedOptimizer* optimizer);
  // Puts it back into the same groups and optimizer (no allocation but a gradient the failed step
  // cleared).
  void restore(const std::vector<fsdp::ParamGroup*>& groups, ShardedOptimizer* optimizer) const;

 private:
  std::vector<std::vector<at::Tensor>> shards_, grads_;  // per group, per param
  ShardedOptimizer::State optimizer_;
};

// What recovery must get back to: the runtime's memory and group states.
struct RuntimeSnapshot {
  int64_t allocated_bytes = 0;  // the rank's allocator bytes (the probe's, absolute)
  memory::KindTotals ledger{};
  std::vector<std::string> unsharded;           // groups not SHARDED
  std::vector<std::string> pending_all_gather;  // groups holding an all-gather output not waited on
  static RuntimeSnapshot of(fsdp::RankRuntime& runtime);
};

// One failed run of a step on this rank, and its recovery.
struct StepFailure {
  int step = 0;
  int attempt = 0;  // 0: the step's first run
  std::exception_ptr error;
  std::string message;
  std::chrono::steady_clock::time_point caught_at, recovered_at;
  RuntimeSnapshot at_step_begin;  // before the failed run
  RuntimeSnapshot after_reset;    // after reset and restore, before the rendezvous
  // The failed run's timeline events, the reset's and "recovered", moved out of the timeline so
  // that it holds each step once.
  std::vector<memory::TimelineEvent> events;
};

struct RecoveryOptions {
  int max_attempts = 3;  // runs of one step, the first included
  // Called on the rank's thread after each recovery, before the step runs again.
  std::function<void(StepFailure&&)> on_recovery;
};

// Runs `step_fn` (one training step) until it has completed on every rank of `world`, recovering
// after each recoverable failure. Returns the step's result. Rethrows an error that is not
// recoverable, the recovery's own error (a peer that cannot recover), or the last error after
// max_attempts runs.
double run_step_with_recovery(const std::function<double()>& step_fn, int step, comm::Communicator& world,
                              nn::Module& model, fsdp::RankRuntime& runtime, ShardedOptimizer* optimizer,
                              const RecoveryOptions& options);

}  // namespace shardfuzz::train
