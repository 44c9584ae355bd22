// ThreadWorld: N ranks as threads of one process, collectives over shared memory. The `threads`
// backend, and the way every runtime test gets a multi-rank world without a GPU.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/comm/schedule.h"

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::comm {

struct ThreadWorldOptions {
  int world_size = 1;
  // How long a rank waits in one collective for its peers before the group is declared stuck.
  std::chrono::milliseconds deadline{30000};
  // One rank thread at a time, handed over at collective boundaries in this schedule's order, with
  // deadlines and pauses on the world's own clock (comm/schedule.h): the run is deterministic.
  // Absent: the OS runs the rank threads in parallel, on the wall clock.
  std::optional<Schedule> schedule;
};

struct RankOutcome {
  int rank = -1;
  bool ok = false;
  std::string error;             // what() of the exception the rank's function threw
  std::exception_ptr exception;  // null when ok
  // Collectives the rank entered after the world was aborted for good (a rank's function threw).
  // Each fails at once in a correct world, so a rank that completed entered none: it had finished
  // every collective before the failure (the world's abort reached it, there was nothing to stop).
  int collectives_after_abort = 0;
};

class ThreadWorld {
 public:
  // Throws std::invalid_argument naming the field (world_size outside 1..1024, deadline <= 0).
  explicit ThreadWorld(ThreadWorldOptions options);

  // Runs fn(world communicator) on world_size threads (rank i on thread i) and joins them. Each run
  // is a fresh world: new groups, sequence numbers from 0. If a rank throws, the world is aborted:
  // every rank blocked in (or later entering) a collective gets CollectiveError(Kind::Aborted)
  // naming the failed rank and its message. Rank failures are reported, never thrown. A rank that
  // recovers instead (Communicator::abort_world, then recover_world on every rank) stays in the run.
  std::vector<RankOutcome> run(const std::function<void(std::shared_ptr<Communicator>)>& fn);

  const ThreadWorldOptions& options() const { return options_; }
  // What the last run's schedule did (scheduled == false without one).
  const ScheduleRecord& schedule_record() const { return schedule_record_; }

 private:
  ThreadWorldOptions options_;
  ScheduleRecord schedule_record_;
};

// Rethrows the failure that started it all: the first failed rank whose error is not a
// consequence of the abort (Kind::Aborted), else the first failed rank. No-op if all ranks are ok.
void rethrow_root_failure(const std::vector<RankOutcome>& outcomes);

}  // namespace shardfuzz::comm
