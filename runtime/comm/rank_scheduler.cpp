// The baton: one rank thread at a time, handed over at collective boundaries, with the world's
// clock advanced only when no rank can run.
#include "runtime/comm/rank_scheduler.h"

#include <algorithm>

namespace shardfuzz::comm::detail {

namespace {
Schedule sorted(Schedule schedule) {
  std::sort(schedule.switches.begin(), schedule.switches.end());
  return schedule;
}
}  // namespace

RankScheduler::RankScheduler(int world_size, Schedule schedule)
    : world_size_(world_size), schedule_(sorted(std::move(schedule))) {
  slots_.reserve(static_cast<size_t>(world_size));
  for (int r = 0; r < world_size; ++r) slots_.push_back(std::make_unique<Slot>());
}

void RankScheduler::note(uint64_t value) {  // FNV-1a over the value's bytes
  for (int i = 0; i < 8; ++i) {
    fingerprint_ ^= (value >> (8 * i)) & 0xff;
    fingerprint_ *= 0x100000001b3ULL;
  }
}

bool RankScheduler::can_run_locked(int rank) {
  Slot& s = *slots_[static_cast<size_t>(rank)];
  switch (s.state) {
    case State::Runnable: return true;
    case State::Blocked:
      if ((*s.ready)()) {
        s.end = WaitEnd::Ready;
        return true;
      }
      if (s.end == WaitEnd::Deadlock) return true;
      if (s.until_ms && *s.until_ms <= now_ms_) {
        s.end = WaitEnd::TimedOut;
        return true;
      }
      return false;
    case State::Sleeping: return s.wake_ms <= now_ms_;
    default: return false;
  }
}

std::vector<int> RankScheduler::candidates_locked(int from) {
  const auto collect = [&] {
    std::vector<int> ranks;
    const int first = from < 0 ? 0 : from;
    for (int i = 0; i < world_size_; ++i) {
      const int r = (first + i) % world_size_;
      if (can_run_locked(r)) ranks.push_back(r);
    }
    return ranks;
  };
  std::vector<int> ranks = collect();
  if (!ranks.empty()) return ranks;
  // No rank can run: the clock jumps to the first deadline or wake-up.
  std::optional<int64_t> next;
  for (const auto& s : slots_) {
    std::optional<int64_t> at;
    if (s->state == State::Blocked && s->until_ms) at = s->until_ms;
    if (s->state == State::Sleeping) at = s->wake_ms;
    if (at && (!next || *at < *next)) next = at;
  }
  if (next) {
    now_ms_ = std::max(now_ms_, *next);
    return collect();
  }
  // Every rank that has not left waits with no deadline for something no rank will do.
  for (const auto& s : slots_)
    if (s->state == State::Blocked) s->end = WaitEnd::Deadlock;
  return collect();
}

void RankScheduler::hand_over_locked(int from) {
  const std::vector<int> ranks = candidates_locked(from);
  if (ranks.empty()) {
    running_ = -1;  // every rank has left
    return;
  }
  uint64_t pick = 0;
  if (ranks.size() > 1) {
    const uint64_t decision = decisions_++;
    pick = schedule_.choose(decision, ranks.size());
    if (pick != 0) switches_.emplace_back(decision, pick);
    note(ranks.size());
    for (int r : ranks) note(static_cast<uint64_t>(r));
  }
  running_ = ranks[pick];
  note(static_cast<uint64_t>(running_));
  note(static_cast<uint64_t>(now_ms_));
  slots_[static_cast<size_t>(running_)]->cv.notify_one();
}

void RankScheduler::await_turn(Lock& lock, int rank) {
  Slot& s = *slots_[static_cast<size_t>(rank)];
  s.cv.wait(lock, [&] { return running_ == rank || released_; });
  s.state = State::Running;
}

void RankScheduler::start(Lock& lock, int rank) {
  slots_[static_cast<size_t>(rank)]->state = State::Runnable;
  if (++started_ == world_size_) hand_over_locked(-1);
  await_turn(lock, rank);
}

void RankScheduler::boundary(Lock& lock, int rank) {
  if (released_) return;
  slots_[static_cast<size_t>(rank)]->state = State::Runnable;
  hand_over_locked(rank);
  await_turn(lock, rank);
}

WaitEnd RankScheduler::block(Lock& lock, int rank, std::optional<int64_t> until_ms,
                             const std::function<bool()>& ready) {
  if (released_) return WaitEnd::Released;
  if (ready()) return WaitEnd::Ready;
  Slot& s = *slots_[static_cast<size_t>(rank)];
  s.state = State::Blocked;
  s.ready = &ready;
  s.until_ms = until_ms;
  s.end = WaitEnd::Ready;
  hand_over_locked(rank);
  await_turn(lock, rank);
  s.ready = nullptr;
  return released_ && running_ != rank ? WaitEnd::Released : s.end;
}

void RankScheduler::pause(Lock& lock, int rank, int64_t ms) {
  if (released_) return;
  Slot& s = *slots_[static_cast<size_t>(rank)];
  s.state = State::Sleeping;
  s.wake_ms = now_ms_ + std::max<int64_t>(0, ms);
  hand_over_locked(rank);
  await_turn(lock, rank);
}

void RankScheduler::leave(Lock& lock, int rank) {
  slots_[static_cast<size_t>(rank)]->state = State::Left;
  if (running_ == rank && !released_) hand_over_locked(rank);
}

void RankScheduler::release_all() {
  released_ = true;
  for (auto& s : slots_) s->cv.notify_all();
}

ScheduleRecord RankScheduler::record() const {
  ScheduleRecord r;
  r.scheduled = !released_;
  r.decisions = decisions_;
  r.switches = switches_;
  r.clock_ms = now_ms_;
  r.fingerprint = fingerprint_;
  return r;
}

}  // namespace shardfuzz::comm::detail
