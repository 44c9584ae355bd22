// The baton behind a scheduled ThreadWorld (comm/schedule.h): which rank thread runs, the world's
// clock, and the record of every decision. Every method runs under the world's lock
// (WorldState::mu_) and may park the calling rank thread on its own condition variable until the
// baton comes back to it. Internal to comm/.
#pragma once

#include "runtime/comm/schedule.h"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace shardfuzz::comm::detail {

// How a blocking wait ended.
enum class WaitEnd {
  Ready,     // its condition holds
  TimedOut,  // the clock reached its deadline first
  Deadlock,  // no rank can ever run again and it has no deadline: nothing will make it ready
  Released,  // the schedule was given up (the world could not start); wait unscheduled
};

class RankScheduler {
 public:
  using Lock = std::unique_lock<std::mutex>;
  RankScheduler(int world_size, Schedule schedule);

  // A rank thread's first step: parks until every rank thread has started (so the first decision
  // sees them all), then until its turn.
  void start(Lock& lock, int rank);
  // A collective boundary: the rank can go on, but another may run first.
  void boundary(Lock& lock, int rank);
  // Parks the rank until `ready()` holds (Ready) or the clock reaches `until_ms` (TimedOut). Returns
  // at once, without a decision, when it already holds. `ready` is read by whichever rank hands
  // the baton over, under the lock.
  WaitEnd block(Lock& lock, int rank, std::optional<int64_t> until_ms, const std::function<bool()>& ready);
  // The rank is away for `ms` on the world's clock (a straggler, a hang).
  void pause(Lock& lock, int rank, int64_t ms);
  // The rank function returned or threw: the baton moves on for good.
  void leave(Lock& lock, int rank);
  // The world could not start every rank thread: parked ranks run unscheduled from now on.
  void release_all();
  bool released() const { return released_; }

  int64_t now_ms() const { return now_ms_; }
  ScheduleRecord record() const;

 private:
  enum class State { Starting, Runnable, Running, Blocked, Sleeping, Left };
  struct Slot {
    State state = State::Starting;
    const std::function<bool()>* ready = nullptr;  // Blocked: the rank's condition
    std::optional<int64_t> until_ms;                // Blocked: its deadline
    int64_t wake_ms = 0;                            // Sleeping: when it comes back
    WaitEnd end = WaitEnd::Ready;                   // how its block ended (set by whoever woke it)
    std::condition_variable cv;
  };
  // The ranks that can run now, in candidate order from `from` (it first); advances the clock to
  // the next deadline or wake-up when none can; empty only when every rank has left or deadlocked
  // ranks were woken.
  std::vector<int> candidates_locked(int from);
  bool can_run_locked(int rank);
  // Picks the next rank from `from`'s point of view and wakes it.
  void hand_over_locked(int from);
  void await_turn(Lock& lock, int rank);
  void note(uint64_t value);  // folds a value into the fingerprint

  const int world_size_;
  const Schedule schedule_;
  std::vector<std::unique_ptr<Slot>> slots_;
  int started_ = 0;
  int running_ = -1;  // the rank holding the baton (-1: none yet, or every rank has left)
  bool released_ = false;
  int64_t now_ms_ = 0;
  uint64_t decisions_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> switches_;
  uint64_t fingerprint_ = 0xcbf29ce484222325ULL;
};

}  // namespace shardfuzz::comm::detail
