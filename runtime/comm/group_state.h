// The shared-memory rendezvous behind ThreadWorld: one WorldState per run, one GroupState per
// group, one Round per collective (keyed by the group's sequence number). Internal to comm/.
#pragma once

#include "runtime/comm/collective_checks.h"
#include "runtime/comm/communicator.h"
#include "runtime/comm/rank_scheduler.h"
#include "runtime/comm/wait_for.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::comm::detail {

class GroupState;

// Whether the calls of one collective (by group rank) can go ahead: every rank's arguments valid,
// every signature equal, all_to_all_single's splits agreeing pairwise. The message names the
// ranks, the group and the sequence number.
struct CallVerdict {
  bool failed = false;
  CollectiveError::Kind kind = CollectiveError::Kind::Mismatch;
  std::string message;
};
CallVerdict judge_calls(const std::vector<Call>& calls, const std::vector<int>& global_ranks, const std::string& group,
                        uint64_t seq);

struct SplitResult {
  std::shared_ptr<GroupState> group;  // null for color < 0
  int rank = -1;
};

struct Round {
  explicit Round(int n) : calls(n), present(n, false), split(n), finished(n, false) {}
  enum class Verdict { Pending, Go, Failed };
  std::vector<Call> calls;  // by group rank; immutable once the verdict is in
  std::vector<bool> present;
  int arrived = 0;
  Verdict verdict = Verdict::Pending;
  CollectiveError::Kind error_kind = CollectiveError::Kind::Mismatch;
  std::string error_message;
  std::vector<SplitResult> split;
  int done = 0;  // ranks that finished reading peers' buffers
  std::vector<bool> finished;  // by group rank: counted in `done`
  std::string compute_error;
  CollectiveError::Kind compute_error_kind = CollectiveError::Kind::InvalidArgument;
  int left = 0;  // ranks that will not touch this round again; the last one erases it
};

// One ThreadWorld::run. A single mutex serialises every group's bookkeeping: collectives hold it
// only to publish and decide, never while copying, so contention is negligible and abort needs no
// lock ordering between groups.
class WorldState {
 public:
  using Lock = std::unique_lock<std::mutex>;
  // `schedule`: one rank thread at a time, in that schedule's order, on the world's own clock
  // (comm/schedule.h); absent: the OS runs the threads and the clock is the wall clock.
  WorldState(int world_size, std::chrono::milliseconds deadline, std::optional<Schedule> schedule = std::nullopt);

  // A rank thread's first step (its turn, under a schedule).
  void start_rank(int rank);
  // The rank is away for `duration` on the world's clock (a straggler's or a hang's pause).
  void pause(int rank, std::chrono::milliseconds duration);
  // The world could not start every rank thread: a schedule stops holding any of them back.
  void release_schedule();
  // What the schedule did (ScheduleRecord::scheduled false without one).
  ScheduleRecord schedule_record();

  // A failure nobody recovers from (the rank's function threw): first failure wins; every group
  // wakes so blocked ranks fail now instead of at the deadline, and recover() fails from now on.
  void abort(int rank, const std::string& message);
  // A failure the ranks recover from (Communicator::abort_world): collectives fail as for abort()
  // until every rank has come through recover().
  void abort_recoverable(int rank, const std::string& message);
  // The recovery rendezvous (Communicator::recover_world): the last rank to arrive resets every
  // group and clears the abort. Returns the new recovery count; throws CollectiveError otherwise.
  int recover(int rank);
  // How many recoveries this world has been through (ThreadCommunicator restarts its sequence
  // numbers when it changes).
  int epoch() const { return epoch_.load(); }
  // A rank thread returned: collectives still waiting for it can never complete.
  void mark_exited(int rank);
  // How many collectives global rank `rank` entered after abort() (see RankOutcome).
  int collectives_after_abort(int rank);

  const int world_size;
  const std::chrono::milliseconds deadline;

 private:
  friend class GroupState;
  void wake_all_locked();
  // The world's clock: milliseconds since the run began (the schedule's clock under a schedule).
  int64_t now_ms_locked() const;
  // A collective boundary of global rank `rank`: under a schedule another rank may run first.
  void boundary_locked(Lock& lock, int rank);
  // Blocks global rank `rank` until ready() or the clock reaches `until_ms` (none: no deadline).
  // Without a schedule it waits on `cv`, which whoever makes ready() true notifies.
  WaitEnd wait_locked(Lock& lock, std::condition_variable& cv, int rank, std::optional<int64_t> until_ms,
                      const std::function<bool()>& ready);
  // Why the rendezvous can never complete ("" while it still can).
  std::string recovery_impossible_locked() const;

  // What each rank is doing now, for the wait-for graph (comm/wait_for.h).
  struct Activity {
    RankActivity::State state = RankActivity::State::Running;
    const GroupState* group = nullptr;  // Waiting in a collective; null: in the recovery rendezvous
    const Round* round = nullptr;
    bool finishing = false;  // in finish(): waiting for peers to read its buffers
    uint64_t sequence = 0;
    std::string op;
    std::string last;  // the last collective it entered
    static Activity in(const GroupState* group, const Round* round, bool finishing, uint64_t sequence, std::string op) {
      Activity a;
      a.group = group;
      a.round = round;
      a.finishing = finishing;
      a.sequence = sequence;
      a.op = std::move(op);
      return a;
    }
  };
  // Marks global rank `rank` waiting until the guard goes (under mu_ both times).
  class WaitingIn {
   public:
    WaitingIn(WorldState& world, int rank, Activity activity);
    ~WaitingIn();
    WaitingIn(const WaitingIn&) = delete;
    WaitingIn& operator=(const WaitingIn&) = delete;

   private:
    WorldState& world_;
    const int rank_;
  };
  RankActivity activity_of_locked(int rank) const;
  // Who global rank `rank`'s wait ends at, across every group: "" when it adds nothing.
  std::string culprit_locked(int rank) const;

  std::mutex mu_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::unique_ptr<RankScheduler> scheduler_;  // null: the OS schedules the rank threads
  bool aborted_ = false;
  int aborted_rank_ = -1;
  std::string abort_message_;
  bool final_ = false;  // abort(): the world is done
  int final_rank_ = -1;
  std::string final_message_;
  std::vector<bool> exited_;
  std::vector<Activity> activity_;
  std::vector<int> after_abort_;  // by global rank: collectives entered after abort()
  std::vector<bool> recovering_;  // in recover() now
  int recovering_count_ = 0;
  int64_t recover_deadline_ms_ = 0;  // on the world's clock; set by the rendezvous' first rank
  std::string recover_failure_;  // the first verdict of a failed rendezvous, shared by all its ranks
  CollectiveError::Kind recover_failure_kind_ = CollectiveError::Kind::Deadline;
  std::atomic<int> epoch_{0};
  std::condition_variable recover_cv_;
  std::vector<std::weak_ptr<GroupState>> groups_;
};

class GroupState {
 public:
  static std::shared_ptr<GroupState> create(std::shared_ptr<WorldState> world, std::string name,
                                            std::vector<int> global_ranks);

  // Phase 1: publish `call` as group rank `rank`'s part of collective `seq`, and block until all
  // ranks have published and agree. Throws CollectiveError otherwise. The round stays valid until
  // finish() returns.
  Round& arrive(int rank, uint64_t seq, Call call);
  // Phase 2: block until every rank has finished reading its peers' buffers, so no rank returns and
  // frees (or overwrites) an input that is still being read. Rethrows any rank's compute error
  // (Kind::InvalidArgument; Kind::Aborted naming the rank when it was an allocation failure).
  void finish(int rank, uint64_t seq, Round& round, const std::string& compute_error, bool allocation_failure = false);

  int size() const { return static_cast<int>(global_ranks_.size()); }
  const std::string& name() const { return name_; }
  const std::vector<int>& global_ranks() const { return global_ranks_; }
  WorldState& world() const { return *world_; }

  GroupState(std::shared_ptr<WorldState> world, std::string name, std::vector<int> global_ranks);

 private:
  friend class WorldState;
  struct Progress {
    bool entered = false;
    uint64_t sequence = 0;
    std::string signature;
  };
  static std::shared_ptr<GroupState> create_locked(const std::shared_ptr<WorldState>& world, std::string name,
                                                   std::vector<int> global_ranks);
  // Recovery: forget unfinished rounds, progress and poison (no rank is inside a collective).
  void reset_locked();
  void decide_locked(Round& round, uint64_t seq);
  void decide_split_locked(Round& round);
  int exited_missing_rank_locked(const Round& round) const;
  std::string deadline_message_locked(int rank, const Round& round, uint64_t seq, const std::string& signature) const;
  void leave_locked(uint64_t seq, Round& round);
  CollectiveError error(CollectiveError::Kind kind, int rank, const std::string& op, uint64_t seq,
                        const std::string& message) const;

  const std::shared_ptr<WorldState> world_;
  const std::string name_;
  const std::vector<int> global_ranks_;
  std::condition_variable cv_;  // waits on world_->mu_
  // Guarded by world_->mu_:
  std::map<uint64_t, Round> rounds_;
  std::vector<Progress> progress_;
  bool poisoned_ = false;
  CollectiveError::Kind poison_kind_ = CollectiveError::Kind::Deadline;
  std::string poison_message_;
};

}  // namespace shardfuzz::comm::detail
