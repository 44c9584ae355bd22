// FaultyCommunicator: each planned fault fires at the rank's k-th collective (counted over all its
// groups) and every rank of the world learns of it — the failing rank by its own error, the peers
// by an abort or a deadline naming it — within the deadline; a delay under the deadline costs
// nothing but time.
#include "runtime/comm/faulty_communicator.h"
#include "runtime/comm/thread_world.h"

#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>

namespace shardfuzz::comm {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Action = CollectiveFault::Action;

constexpr auto kDeadline = 400ms;

struct Outcome {
  std::vector<RankOutcome> ranks;
  std::vector<double> seconds;  // per rank: from the start until its function returned or threw
  std::vector<std::string> fired;  // "rank R: action op on group" for each fault that fired
};

// Every rank runs `collectives` all-reduces on the world, then one on a split group of all ranks.
Outcome run(int world, const std::map<int, std::vector<CollectiveFault>>& plan, int collectives = 4) {
  Outcome out;
  out.seconds.assign(static_cast<std::size_t>(world), 0);
  std::mutex mu;
  const auto t0 = Clock::now();
  out.ranks = ThreadWorld(ThreadWorldOptions{world, kDeadline}).run([&](std::shared_ptr<Communicator> comm) {
    const int rank = comm->global_rank();
    auto it = plan.find(rank);
    std::shared_ptr<Communicator> c = FaultyCommunicator::wrap(
        comm, it == plan.end() ? std::vector<CollectiveFault>{} : it->second,
        [&](const CollectiveFault& f, const std::string& group, const std::string& op) {
          std::lock_guard<std::mutex> lock(mu);
          out.fired.push_back("rank " + std::to_string(rank) + ": " + to_string(f.action) + " " + op + " on " + group);
        });
    struct Stamp {
      std::vector<double>& s;
      int r;
      Clock::time_point t0;
      ~Stamp() { s[static_cast<std::size_t>(r)] = std::chrono::duration<double>(Clock::now() - t0).count(); }
    } stamp{out.seconds, rank, t0};
    std::shared_ptr<Communicator> sub = c->split(0, rank, "sub");
    for (int k = 0; k < collectives; ++k) {
      at::Tensor t = at::full({4}, static_cast<float>(rank + 1));
      c->all_reduce(t, ReduceOp::Sum);
      EXPECT_FLOAT_EQ(t[0].item<float>(), world * (world + 1) / 2.0f);
    }
    at::Tensor t = at::zeros({2});
    sub->all_reduce(t, ReduceOp::Sum);
  });
  return out;
}

CollectiveError::Kind kind_of(const RankOutcome& o) {
  try {
    std::rethrow_exception(o.exception);
  } catch (const CollectiveError& e) {
    return e.kind;
  } catch (...) {
  }
  ADD_FAILURE() << "rank " << o.rank << " failed without a CollectiveError: " << o.error;
  return CollectiveError::Kind::InvalidArgument;
}

TEST(FaultyCommunicator, NoPlanChangesNothing) {
  const Outcome o = run(3, {});
  for (const auto& r : o.ranks) EXPECT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(o.fired.empty());
}

TEST(FaultyCommunicator, AnInjectedErrorFailsThatRankAndAbortsItsPeersNamingIt) {
  const Outcome o = run(3, {{1, {{Action::Error, 2}}}});
  ASSERT_EQ(o.fired, std::vector<std::string>{"rank 1: error all_reduce on world"});
  EXPECT_EQ(kind_of(o.ranks[1]), CollectiveError::Kind::Injected);
  // The rank's collective 2 is the world group's #3: the split was the world's #0.
  EXPECT_NE(o.ranks[1].error.find("injected collective error at rank 1, collective 2 (all_reduce #3 on group world)"),
            std::string::npos)
      << o.ranks[1].error;
  for (int r : {0, 2}) {
    EXPECT_EQ(kind_of(o.ranks[r]), CollectiveError::Kind::Aborted) << o.ranks[r].error;
    EXPECT_NE(o.ranks[r].error.find("rank 1"), std::string::npos) << o.ranks[r].error;
    EXPECT_LT(o.seconds[r], std::chrono::duration<double>(kDeadline).count()) << "detected by the abort, not the clock";
  }
}

TEST(FaultyCommunicator, AHangIsDetectedByThePeersDeadlineNamingTheCollective) {
  const Outcome o = run(3, {{0, {{Action::Hang, 1, 3 * kDeadline}}}});
  ASSERT_EQ(o.fired.size(), 1u);
  for (int r : {1, 2}) {
    // The first peer whose clock runs out reports the deadline; the other is aborted with it.
    const CollectiveError::Kind k = kind_of(o.ranks[r]);
    EXPECT_TRUE(k == CollectiveError::Kind::Deadline || k == CollectiveError::Kind::Aborted) << o.ranks[r].error;
    EXPECT_NE(o.ranks[r].error.find("deadline of 400 ms exceeded"), std::string::npos) << o.ranks[r].error;
    EXPECT_NE(o.ranks[r].error.find("missing ranks [0 (last entered sequence 1: all_reduce"), std::string::npos)
        << o.ranks[r].error;
    EXPECT_LT(o.seconds[r], 2 * std::chrono::duration<double>(kDeadline).count());
  }
  EXPECT_FALSE(o.ranks[0].ok) << "the hung rank comes back to an aborted world";
}

TEST(FaultyCommunicator, ACrashEndsThatRankAndItsPeersAreAbortedWithoutWaiting) {
  const Outcome o = run(4, {{2, {{Action::Crash, 0}}}});
  ASSERT_FALSE(o.ranks[2].ok);
  EXPECT_NE(o.ranks[2].error.find("injected crash: rank 2 died before collective 0"), std::string::npos)
      << o.ranks[2].error;
  for (int r : {0, 1, 3}) {
    EXPECT_FALSE(o.ranks[r].ok);
    EXPECT_NE(o.ranks[r].error.find("rank 2"), std::string::npos) << o.ranks[r].error;
    EXPECT_LT(o.seconds[r], std::chrono::duration<double>(kDeadline).count());
  }
}

TEST(FaultyCommunicator, AStragglerUnderTheDeadlineOnlyCostsTime) {
  const Outcome o = run(2, {{1, {{Action::Delay, 1, 100ms}, {Action::Delay, 3, 100ms}}}});
  for (const auto& r : o.ranks) EXPECT_TRUE(r.ok) << r.error;
  EXPECT_EQ(o.fired.size(), 2u);
  EXPECT_GE(o.seconds[0], 0.2) << "the peer waited for the straggler twice";
}

TEST(FaultyCommunicator, TheCountRunsOverEveryGroupOfTheRank) {
  // Four world all-reduces are collectives 0-3; the split group's all-reduce is collective 4.
  const Outcome o = run(2, {{0, {{Action::Error, 4}}}});
  ASSERT_EQ(o.fired, std::vector<std::string>{"rank 0: error all_reduce on sub"});
  EXPECT_EQ(kind_of(o.ranks[0]), CollectiveError::Kind::Injected);
}

}  // namespace
}  // namespace shardfuzz::comm
