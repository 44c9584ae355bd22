// Rendezvous, verdicts (mismatch, invalid argument, deadline, abort) and comm-split for ThreadWorld.
#include "runtime/comm/group_state.h"

#include <algorithm>
#include <sstream>
#include <thread>
#include <tuple>

namespace shardfuzz::comm::detail {
namespace {

using Clock = std::chrono::steady_clock;
using Kind = CollectiveError::Kind;

std::string rank_list(const std::vector<int>& ranks) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < ranks.size(); ++i) os << (i ? ", " : "") << ranks[i];
  os << "]";
  return os.str();
}

}  // namespace

WorldState::WorldState(int world_size, std::chrono::milliseconds deadline, std::optional<Schedule> schedule)
    : world_size(world_size),
      deadline(deadline),
      exited_(world_size, false),
      activity_(world_size),
      after_abort_(world_size, 0),
      recovering_(world_size, false) {
  if (schedule) scheduler_ = std::make_unique<RankScheduler>(world_size, std::move(*schedule));
}

void WorldState::start_rank(int rank) {
  Lock lock(mu_);
  if (scheduler_) scheduler_->start(lock, rank);
}

void WorldState::pause(int rank, std::chrono::milliseconds duration) {
  Lock lock(mu_);
  Activity& a = activity_.at(rank);
  a.state = RankActivity::State::Paused;
  if (scheduler_ && !scheduler_->released()) {
    scheduler_->pause(lock, rank, duration.count());
  } else {
    lock.unlock();
    std::this_thread::sleep_for(duration);
    lock.lock();
  }
  a.state = RankActivity::State::Running;
}

WorldState::WaitingIn::WaitingIn(WorldState& world, int rank, Activity activity) : world_(world), rank_(rank) {
  Activity& a = world_.activity_.at(rank);
  activity.last = activity.group ? "'" + activity.group->name() + "' at sequence " + std::to_string(activity.sequence) +
                                       ": " + activity.op
                                  : a.last;
  a = std::move(activity);
  a.state = RankActivity::State::Waiting;
}

WorldState::WaitingIn::~WaitingIn() { world_.activity_.at(rank_).state = RankActivity::State::Running; }

RankActivity WorldState::activity_of_locked(int rank) const {
  const Activity& a = activity_.at(rank);
  RankActivity out;
  out.state = exited_.at(rank) ? RankActivity::State::Exited : a.state;
  out.last = a.last;
  if (out.state != RankActivity::State::Waiting) return out;
  out.sequence = a.sequence;
  out.op = a.op;
  if (!a.group) {  // the recovery rendezvous
    out.group = "world";
    for (int r = 0; r < world_size; ++r)
      if (!recovering_[r]) out.on.push_back(r);
  } else {
    out.group = a.group->name();
    const std::vector<int>& members = a.group->global_ranks();
    for (std::size_t r = 0; r < members.size(); ++r)
      if (a.finishing ? !a.round->finished[r] : !a.round->present[r]) out.on.push_back(members[r]);
    // A decided round (or a failed group) lets the rank go on: it waits on nobody.
    if (!a.finishing && (a.round->verdict != Round::Verdict::Pending || a.group->poisoned_)) out.on.clear();
  }
  if (out.on.empty()) out.state = RankActivity::State::Running;
  return out;
}

std::string WorldState::culprit_locked(int rank) const {
  std::vector<RankActivity> world;
  for (int r = 0; r < world_size; ++r) world.push_back(activity_of_locked(r));
  return attribute(world, rank).text;
}

void WorldState::release_schedule() {
  std::lock_guard<std::mutex> lock(mu_);
  if (scheduler_) scheduler_->release_all();
}

ScheduleRecord WorldState::schedule_record() {
  std::lock_guard<std::mutex> lock(mu_);
  return scheduler_ ? scheduler_->record() : ScheduleRecord{};
}

int64_t WorldState::now_ms_locked() const {
  if (scheduler_ && !scheduler_->released()) return scheduler_->now_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_).count();
}

void WorldState::boundary_locked(Lock& lock, int rank) {
  if (scheduler_) scheduler_->boundary(lock, rank);
}

WaitEnd WorldState::wait_locked(Lock& lock, std::condition_variable& cv, int rank, std::optional<int64_t> until_ms,
                                const std::function<bool()>& ready) {
  if (scheduler_) {
    const WaitEnd end = scheduler_->block(lock, rank, until_ms, ready);
    if (end != WaitEnd::Released) return end;
  }
  if (!until_ms) {
    cv.wait(lock, ready);
    return WaitEnd::Ready;
  }
  return cv.wait_until(lock, started_ + std::chrono::milliseconds(*until_ms), ready) ? WaitEnd::Ready
                                                                                    : WaitEnd::TimedOut;
}

void WorldState::abort(int rank, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!final_) {
    final_ = true;
    final_rank_ = rank;
    final_message_ = message;
  }
  if (!aborted_) {
    aborted_ = true;
    aborted_rank_ = rank;
    abort_message_ = message;
  }
  wake_all_locked();
}

void WorldState::abort_recoverable(int rank, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) return;
  aborted_ = true;
  aborted_rank_ = rank;
  abort_message_ = message;
  wake_all_locked();
}

std::string WorldState::recovery_impossible_locked() const {
  if (final_) return "rank " + std::to_string(final_rank_) + " failed for good: " + final_message_;
  for (int r = 0; r < world_size; ++r)
    if (exited_[r] && !recovering_[r]) return "rank " + std::to_string(r) + " has left its rank function";
  return "";
}

int WorldState::recover(int rank) {
  Lock lock(mu_);
  const int epoch = epoch_.load();
  if (recovering_count_ == 0) {  // a new rendezvous: one deadline and one verdict for all its ranks
    recover_deadline_ms_ = now_ms_locked() + deadline.count();
    recover_failure_.clear();
  }
  if (!recovering_.at(rank)) {
    recovering_[rank] = true;
    ++recovering_count_;
  }
  if (recovering_count_ == world_size && recovery_impossible_locked().empty()) {
    for (auto& weak : groups_)
      if (auto group = weak.lock()) group->reset_locked();
    aborted_ = false;
    aborted_rank_ = -1;
    abort_message_.clear();
    recovering_.assign(world_size, false);
    recovering_count_ = 0;
    epoch_.store(epoch + 1);
    recover_cv_.notify_all();
    return epoch + 1;
  }
  const WaitingIn waiting(*this, rank, Activity::in(nullptr, nullptr, false, static_cast<uint64_t>(epoch), "recover_world"));
  wait_locked(lock, recover_cv_, rank, recover_deadline_ms_, [&] {
    return epoch_.load() != epoch || !recover_failure_.empty() || !recovery_impossible_locked().empty();
  });
  if (epoch_.load() != epoch) return epoch_.load();
  if (recover_failure_.empty()) {
    const std::string why = recovery_impossible_locked();
    std::vector<int> arrived, missing;
    for (int r = 0; r < world_size; ++r) (recovering_[r] ? arrived : missing).push_back(r);
    std::ostringstream os;
    os << "recovery of the world failed after " << epoch << " recoveries: ";
    if (!why.empty())
      os << why;
    else
      os << "deadline of " << deadline.count() << " ms exceeded waiting for ranks " << rank_list(missing)
         << " (arrived ranks " << rank_list(arrived) << ")";
    recover_failure_ = os.str();
    recover_failure_kind_ = why.empty() ? Kind::Deadline : Kind::Aborted;
    recover_cv_.notify_all();
  }
  recovering_[rank] = false;
  --recovering_count_;
  throw CollectiveError(recover_failure_kind_, "world", rank, "recover_world", static_cast<uint64_t>(epoch),
                        "rank " + std::to_string(rank) + ": " + recover_failure_);
}

void WorldState::mark_exited(int rank) {
  Lock lock(mu_);
  exited_.at(rank) = true;
  wake_all_locked();
  if (scheduler_) scheduler_->leave(lock, rank);
}

int WorldState::collectives_after_abort(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  return after_abort_.at(rank);
}

void WorldState::wake_all_locked() {
  for (auto& weak : groups_)
    if (auto group = weak.lock()) group->cv_.notify_all();
  recover_cv_.notify_all();
}

GroupState::GroupState(std::shared_ptr<WorldState> world, std::string name, std::vector<int> global_ranks)
    : world_(std::move(world)),
      name_(std::move(name)),
      global_ranks_(std::move(global_ranks)),
      progress_(global_ranks_.size()) {}

std::shared_ptr<GroupState> GroupState::create(std::shared_ptr<WorldState> world, std::string name,
                                               std::vector<int> global_ranks) {
  std::lock_guard<std::mutex> lock(world->mu_);
  return create_locked(world, std::move(name), std::move(global_ranks));
}

std::shared_ptr<GroupState> GroupState::create_locked(const std::shared_ptr<WorldState>& world, std::string name,
                                                      std::vector<int> global_ranks) {
  auto group = std::make_shared<GroupState>(world, std::move(name), std::move(global_ranks));
  auto& groups = world->groups_;
  groups.erase(std::remove_if(groups.begin(), groups.end(), [](const auto& w) { return w.expired(); }), groups.end());
  groups.push_back(group);
  return group;
}

void GroupState::reset_locked() {
  rounds_.clear();
  progress_.assign(progress_.size(), Progress{});
  poisoned_ = false;
  poison_message_.clear();
}

CollectiveError GroupState::error(Kind kind, int rank, const std::string& op, uint64_t seq,
                                  const std::string& message) const {
  return CollectiveError(kind, name_, global_ranks_[rank], op, seq, message);
}

Round& GroupState::arrive(int rank, uint64_t seq, Call call) {
  const std::string op = call.op;
  const std::string signature = call.signature;
  const std::string invalid = call.invalid;
  const auto aborted = [&] {
    return error(Kind::Aborted, rank, op, seq,
                 op + " at sequence " + std::to_string(seq) + " in group '" + name_ + "' aborted: rank " +
                     std::to_string(world_->aborted_rank_) + " failed: " + world_->abort_message_);
  };
  WorldState::Lock lock(world_->mu_);
  world_->boundary_locked(lock, global_ranks_[rank]);
  if (world_->final_) ++world_->after_abort_[global_ranks_[rank]];
  const int64_t deadline_at = world_->now_ms_locked() + world_->deadline.count();
  progress_[rank] = {true, seq, signature};
  if (world_->aborted_) throw aborted();
  if (poisoned_) {
    throw error(poison_kind_, rank, op, seq,
                "group '" + name_ + "' is unusable after an earlier failure: " + poison_message_);
  }

  Round& round = rounds_.try_emplace(seq, size()).first->second;
  round.calls[rank] = std::move(call);
  round.present[rank] = true;
  const WorldState::WaitingIn waiting(*world_, global_ranks_[rank],
                                      WorldState::Activity::in(this, &round, false, seq, signature));
  if (++round.arrived == size()) {
    decide_locked(round, seq);
    cv_.notify_all();
  }
  if (!invalid.empty()) {
    // Nothing of ours is published, so there is nothing to wait for: fail now, and let peers fail
    // when the round completes.
    leave_locked(seq, round);
    throw error(Kind::InvalidArgument, rank, op, seq,
                "invalid arguments to " + op + " on rank " + std::to_string(global_ranks_[rank]) + " in group '" +
                    name_ + "' at sequence " + std::to_string(seq) + ": " + invalid);
  }

  world_->wait_locked(lock, cv_, global_ranks_[rank], deadline_at, [&] {
    return round.verdict != Round::Verdict::Pending || poisoned_ || world_->aborted_ ||
           exited_missing_rank_locked(round) >= 0;
  });
  // A decided round wins over a later abort or poison: every rank must then take the same branch,
  // or a peer could still be reading our buffers after we returned.
  if (round.verdict == Round::Verdict::Go) return round;
  if (round.verdict == Round::Verdict::Failed) {
    const Kind kind = round.error_kind;
    const std::string message = round.error_message;
    leave_locked(seq, round);
    throw error(kind, rank, op, seq, message);
  }
  if (world_->aborted_) throw aborted();
  if (!poisoned_) {
    const int gone = exited_missing_rank_locked(round);
    poison_kind_ = Kind::Deadline;
    if (gone >= 0) {
      std::vector<int> arrived;
      for (int r = 0; r < size(); ++r)
        if (round.present[r]) arrived.push_back(global_ranks_[r]);
      poison_message_ = signature + " in group '" + name_ + "' at sequence " + std::to_string(seq) +
                        " can never complete: rank " + std::to_string(gone) +
                        " returned from its rank function without entering it (arrived ranks " + rank_list(arrived) +
                        ")";
    } else {
      poison_message_ = deadline_message_locked(rank, round, seq, signature);  // while the group still waits
    }
    poisoned_ = true;
    cv_.notify_all();
  }
  throw error(poison_kind_, rank, op, seq, poison_message_);
}

void GroupState::finish(int rank, uint64_t seq, Round& round, const std::string& compute_error,
                        bool allocation_failure) {
  WorldState::Lock lock(world_->mu_);
  if (!compute_error.empty() && round.compute_error.empty()) {
    const std::string where = "in group '" + name_ + "' at sequence " + std::to_string(seq);
    const std::string first_line = compute_error.substr(0, compute_error.find('\n'));
    round.compute_error = allocation_failure ? round.calls[rank].op + " " + where + " aborted: rank " +
                                                   std::to_string(global_ranks_[rank]) + " failed: " + first_line
                                             : round.calls[rank].op + " failed on rank " +
                                                   std::to_string(global_ranks_[rank]) + " " + where + ": " +
                                                   compute_error;
    round.compute_error_kind = allocation_failure ? Kind::Aborted : Kind::InvalidArgument;
  }
  round.finished[rank] = true;
  if (++round.done == size()) cv_.notify_all();
  const WorldState::WaitingIn waiting(*world_, global_ranks_[rank],
                                      WorldState::Activity::in(this, &round, true, seq, round.calls[rank].signature));
  // No deadline here: every rank has arrived and only bounded local copies remain, and leaving
  // early would let a peer read freed memory.
  const WaitEnd end = world_->wait_locked(lock, cv_, global_ranks_[rank], std::nullopt,
                                         [&] { return round.done == size(); });
  if (end == WaitEnd::Deadlock) {
    // Only a schedule can tell: every rank of the world waits, and none of them will finish this.
    const std::string op = round.calls[rank].op;
    const std::string message = op + " in group '" + name_ + "' at sequence " + std::to_string(seq) +
                                " can never complete: " + std::to_string(round.done) + " of " +
                                std::to_string(size()) +
                                " ranks finished reading their peers' buffers, the others left it, and no rank of "
                                "the world can run (a deadlock)";
    leave_locked(seq, round);
    throw error(Kind::Deadline, rank, op, seq, message);
  }
  const std::string failure = round.compute_error;
  const Kind kind = round.compute_error_kind;
  const std::string op = round.calls[rank].op;
  leave_locked(seq, round);
  if (!failure.empty()) throw error(kind, rank, op, seq, failure);
}

void GroupState::leave_locked(uint64_t seq, Round& round) {
  if (++round.left == size()) rounds_.erase(seq);
}

int GroupState::exited_missing_rank_locked(const Round& round) const {
  for (int r = 0; r < size(); ++r)
    if (!round.present[r] && world_->exited_[global_ranks_[r]]) return global_ranks_[r];
  return -1;
}

std::string GroupState::deadline_message_locked(int rank, const Round& round, uint64_t seq,
                                                const std::string& signature) const {
  std::ostringstream os;
  os << "deadline of " << world_->deadline.count() << " ms exceeded in group '" << name_ << "' at sequence " << seq
     << " waiting in " << signature << ": arrived ranks [";
  bool first = true;
  for (int r = 0; r < size(); ++r) {
    if (!round.present[r]) continue;
    os << (first ? "" : ", ") << global_ranks_[r];
    first = false;
  }
  os << "], missing ranks [";
  first = true;
  for (int r = 0; r < size(); ++r) {
    if (round.present[r]) continue;
    os << (first ? "" : ", ") << global_ranks_[r];
    first = false;
    if (progress_[r].entered)
      os << " (last entered sequence " << progress_[r].sequence << ": " << progress_[r].signature << ")";
    else
      os << " (entered no collective in this group)";
  }
  os << "]";
  const std::string culprit = world_->culprit_locked(global_ranks_[rank]);
  if (!culprit.empty()) os << "; " << culprit;
  return os.str();
}

CallVerdict judge_calls(const std::vector<Call>& calls, const std::vector<int>& global_ranks, const std::string& group,
                        uint64_t seq) {
  using Kind = CollectiveError::Kind;
  const auto fail = [](Kind kind, std::string message) { return CallVerdict{true, kind, std::move(message)}; };
  const std::string where = "in group '" + group + "' at sequence " + std::to_string(seq);
  const auto n = static_cast<int>(calls.size());
  for (int r = 0; r < n; ++r) {
    if (calls[r].invalid.empty()) continue;
    return fail(Kind::InvalidArgument, "invalid arguments to " + calls[r].op + " on rank " +
                                           std::to_string(global_ranks[r]) + " " + where + ": " + calls[r].invalid);
  }
  for (int r = 1; r < n; ++r) {
    if (calls[r].signature == calls[0].signature) continue;
    return fail(Kind::Mismatch, "collective mismatch " + where + ": rank " + std::to_string(global_ranks[0]) +
                                    " called " + calls[0].signature + " but rank " + std::to_string(global_ranks[r]) +
                                    " called " + calls[r].signature);
  }
  if (calls[0].op == "all_to_all_single") {
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        const int64_t sent = calls[i].send_rows[j], expected = calls[j].recv_rows[i];
        if (sent == expected) continue;
        return fail(Kind::Mismatch, "all_to_all_single split mismatch " + where + ": rank " +
                                        std::to_string(global_ranks[i]) + " sends " + std::to_string(sent) +
                                        " rows to rank " + std::to_string(global_ranks[j]) + " but rank " +
                                        std::to_string(global_ranks[j]) + " expects " + std::to_string(expected) +
                                        " rows from rank " + std::to_string(global_ranks[i]));
      }
    }
  }
  return {};
}

void GroupState::decide_locked(Round& round, uint64_t seq) {
  const CallVerdict verdict = judge_calls(round.calls, global_ranks_, name_, seq);
  if (verdict.failed) {
    round.verdict = Round::Verdict::Failed;
    round.error_kind = verdict.kind;
    round.error_message = verdict.message;
    return;
  }
  if (round.calls[0].op == "split") decide_split_locked(round);
  round.verdict = Round::Verdict::Go;
}

void GroupState::decide_split_locked(Round& round) {
  // (color, key, parent rank) sorts each new group's members into their new ranks.
  std::vector<std::tuple<int, int, int>> order;
  for (int r = 0; r < size(); ++r)
    if (round.calls[r].color >= 0) order.emplace_back(round.calls[r].color, round.calls[r].key, r);
  std::sort(order.begin(), order.end());
  for (size_t begin = 0; begin < order.size();) {
    size_t end = begin;
    std::vector<int> members;
    while (end < order.size() && std::get<0>(order[end]) == std::get<0>(order[begin]))
      members.push_back(global_ranks_[std::get<2>(order[end++])]);
    // The lowest parent rank's name wins, so the name is the same whichever rank decides.
    int namer = std::get<2>(order[begin]);
    for (size_t i = begin; i < end; ++i) namer = std::min(namer, std::get<2>(order[i]));
    auto group = create_locked(world_, round.calls[namer].split_name, std::move(members));
    for (size_t i = begin; i < end; ++i) round.split[std::get<2>(order[i])] = {group, static_cast<int>(i - begin)};
    begin = end;
  }
}

}  // namespace shardfuzz::comm::detail
