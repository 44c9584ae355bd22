// The wait-for graph across process groups (comm/wait_for.h): the pure attribution, and ThreadWorld
// naming the culprit in every waiting peer's error, with the chain, under a schedule (so the order
// the deadlines fire in is the same on every run).
#include "runtime/comm/wait_for.h"

#include "runtime/comm/faulty_communicator.h"
#include "runtime/comm/thread_world.h"

#include <ATen/ops/ones.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

namespace shardfuzz::comm {
namespace {

using namespace std::chrono_literals;
using State = RankActivity::State;

RankActivity waiting(const std::string& group, uint64_t seq, std::vector<int> on) {
  RankActivity a;
  a.state = State::Waiting;
  a.group = group;
  a.sequence = seq;
  a.op = "all_gather_into_tensor(numel=4, float)";
  a.on = std::move(on);
  return a;
}

RankActivity in(State state, std::string last = "") {
  RankActivity a;
  a.state = state;
  a.last = std::move(last);
  return a;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(WaitFor, FollowsTheChainAcrossGroupsToTheRankThatWaitsOnNobody) {
  // The case: rank 2 waits in 'ep' on rank 0, which waits in 'dp_mod_ep' on rank 1 (hung).
  const std::vector<RankActivity> world = {waiting("dp_mod_ep", 3, {1}), in(State::Paused, "'dp' at sequence 2: x"),
                                           waiting("ep", 2, {0}), in(State::Running)};
  const Attribution a = attribute(world, 2);
  EXPECT_EQ(a.culprits, std::vector<int>{1});
  EXPECT_FALSE(a.cycle);
  EXPECT_TRUE(has(a.text, "culprit: rank 1 is paused, in no collective (last entered 'dp' at sequence 2: x)")) << a.text;
  EXPECT_TRUE(has(a.text, "rank 2 is waiting on rank 0 in 'ep' at sequence 2 (all_gather_into_tensor(numel=4, "
                          "float)); rank 0 is waiting on rank 1 in 'dp_mod_ep' at sequence 3"))
      << a.text;
}

TEST(WaitFor, ThreeGroupsDeepAndSeveralCulpritsEachWithItsChain) {
  const std::vector<RankActivity> world = {waiting("a", 0, {1}), waiting("b", 4, {2, 4}), waiting("c", 1, {3}),
                                           in(State::Exited), in(State::Running)};
  const Attribution a = attribute(world, 0);
  EXPECT_EQ(a.culprits, (std::vector<int>{3, 4}));
  EXPECT_TRUE(has(a.text, "culprits: rank 3 has returned from its rank function; rank 4 is running outside any "
                          "collective, having entered no collective"))
      << a.text;
  EXPECT_TRUE(has(a.text, "rank 0 is waiting on rank 1 in 'a' at sequence 0 (all_gather_into_tensor(numel=4, "
                          "float)); rank 1 is waiting on rank 2 in 'b' at sequence 4"))
      << a.text;
  EXPECT_TRUE(has(a.text, "rank 2 is waiting on rank 3 in 'c' at sequence 1")) << a.text;
  EXPECT_TRUE(has(a.text, "rank 1 is waiting on rank 4 in 'b'")) << a.text;
}

TEST(WaitFor, ADirectWaitNamesTheCulpritWithoutRepeatingTheEdge) {
  const std::vector<RankActivity> world = {waiting("dp", 1, {1}), in(State::Running, "'dp' at sequence 0: y")};
  const Attribution a = attribute(world, 0);
  EXPECT_EQ(a.text, "culprit: rank 1 is running outside any collective (last entered 'dp' at sequence 0: y)");
}

TEST(WaitFor, RanksWaitingOnEachOtherAreADeadlock) {
  // Rank 0 entered 'a' then 'b', rank 1 'b' then 'a'; rank 2 waits on rank 0.
  const std::vector<RankActivity> world = {waiting("a", 0, {1}), waiting("b", 0, {0}), waiting("c", 5, {0})};
  const Attribution a = attribute(world, 2);
  EXPECT_TRUE(a.cycle);
  EXPECT_EQ(a.culprits, (std::vector<int>{0, 1}));
  EXPECT_TRUE(has(a.text, "a deadlock: ranks [0, 1] wait on each other (collectives entered in different orders): "
                          "rank 0 is waiting on rank 1 in 'a' at sequence 0"))
      << a.text;
  EXPECT_TRUE(has(a.text, "rank 1 is waiting on rank 0 in 'b' at sequence 0")) << a.text;
}

TEST(WaitFor, ARankThatWaitsOnNobodyHasNoCulprit) {
  EXPECT_TRUE(attribute({in(State::Running), waiting("x", 0, {0})}, 0).text.empty());
  EXPECT_TRUE(attribute({in(State::Running)}, 3).culprits.empty());
}

// Groups of the world by membership: each built by a split every rank calls (color -1: not a member).
std::shared_ptr<Communicator> group_of(const std::shared_ptr<Communicator>& world, const std::vector<int>& members,
                                       const std::string& name) {
  const bool member = std::find(members.begin(), members.end(), world->global_rank()) != members.end();
  return world->split(member ? 0 : -1, world->global_rank(), name);
}

// A chain of groups a={0,1}, b={1,2}, c={2,3}: rank r waits in the group it shares with rank r+1,
// entering it r ms after rank 0 (so rank 0's deadline fires first), and the last rank hangs before
// its collective. Every waiting rank's error names it.
std::vector<RankOutcome> run_chain(int n, const std::function<void(std::shared_ptr<Communicator>)>& last) {
  ThreadWorld world({n, 1000ms, Schedule{}});
  return world.run([&](std::shared_ptr<Communicator> c) {
    std::vector<std::shared_ptr<Communicator>> links;
    for (int i = 0; i + 1 < n; ++i) links.push_back(group_of(c, {i, i + 1}, std::string(1, static_cast<char>('a' + i))));
    const int me = c->global_rank();
    if (me == n - 1) return last(c);
    at::Tensor t = at::ones({3});
    c->pause(std::chrono::milliseconds(me));
    links[static_cast<std::size_t>(me)]->all_reduce(t, ReduceOp::Sum);
  });
}

TEST(WaitFor, EveryPeerOfAChainAcrossTwoAndThreeGroupsNamesTheHungRank) {
  for (int n : {3, 4}) {
    const int culprit = n - 1;
    const auto outcomes = run_chain(n, [](std::shared_ptr<Communicator> c) { c->pause(60s); });
    for (const RankOutcome& o : outcomes) {
      if (o.rank == culprit) continue;
      ASSERT_FALSE(o.ok) << "world " << n << " rank " << o.rank;
      EXPECT_TRUE(has(o.error, "culprit: rank " + std::to_string(culprit) + " is paused, in no collective"))
          << "world " << n << " rank " << o.rank << ": " << o.error;
    }
    // Rank 0 waits in 'a' on rank 1 only: the chain shows how that reaches the hung rank.
    const std::string& first = outcomes[0].error;
    EXPECT_TRUE(has(first, "rank 0 is waiting on rank 1 in 'a' at sequence 0 (all_reduce(shape=[3], float, sum)); "
                           "rank 1 is waiting on rank 2 in 'b' at sequence 0"))
        << first;
    if (n == 4) EXPECT_TRUE(has(first, "rank 2 is waiting on rank 3 in 'c' at sequence 0")) << first;
  }
}

TEST(WaitFor, ARankWhoseCollectiveMismatchesIsNamedByPeersWaitingOnItElsewhere) {
  // Rank 2 calls another size than rank 1 in 'b' at the same sequence: both fail with a mismatch,
  // and rank 0, waiting in 'a' on rank 1, learns it from the abort.
  ThreadWorld world({3, 1000ms, Schedule{}});
  const auto result = world.run([&](std::shared_ptr<Communicator> c) {
    auto a = group_of(c, {0, 1}, "a");
    auto b = group_of(c, {1, 2}, "b");
    const int me = c->global_rank();
    at::Tensor t = at::ones({me == 2 ? 5 : 3});
    if (me == 0) a->all_reduce(t, ReduceOp::Sum);
    if (me == 1) {
      b->all_reduce(t, ReduceOp::Sum);
      a->all_reduce(t, ReduceOp::Sum);
    }
    if (me == 2) b->all_reduce(t, ReduceOp::Sum);
  });
  for (const RankOutcome& o : result) {
    ASSERT_FALSE(o.ok) << o.rank;
    EXPECT_TRUE(has(o.error, "collective mismatch in group 'b' at sequence 0: rank 1 called all_reduce(shape=[3]"))
        << "rank " << o.rank << ": " << o.error;
    EXPECT_TRUE(has(o.error, "rank 2 called all_reduce(shape=[5]")) << "rank " << o.rank << ": " << o.error;
  }
}

TEST(WaitFor, CollectivesEnteredInDifferentOrdersAreReportedAsADeadlock) {
  ThreadWorld world({2, 1000ms, Schedule{}});
  const auto outcomes = world.run([&](std::shared_ptr<Communicator> c) {
    auto a = c->split(0, c->global_rank(), "a");
    auto b = c->split(0, c->global_rank(), "b");
    at::Tensor t = at::ones({2});
    const bool a_first = c->global_rank() == 0;
    (a_first ? a : b)->all_reduce(t, ReduceOp::Sum);
    (a_first ? b : a)->all_reduce(t, ReduceOp::Sum);
  });
  for (const RankOutcome& o : outcomes) {
    ASSERT_FALSE(o.ok) << o.rank;
    EXPECT_TRUE(has(o.error, "a deadlock: ranks [0, 1] wait on each other")) << "rank " << o.rank << ": " << o.error;
  }
}

TEST(WaitFor, AFaultyCommunicatorsHangIsNamedAcrossGroupsWithoutASchedule) {
  // The OS's order: the hung rank pauses on the wall clock; its peers' deadlines fire while it is away.
  ThreadWorld world({3, 1000ms});  // margins for a loaded CI machine
  const auto outcomes = world.run([&](std::shared_ptr<Communicator> c) {
    auto a = group_of(c, {0, 1}, "a");
    auto b = group_of(c, {1, 2}, "b");
    std::vector<CollectiveFault> plan;
    if (c->global_rank() == 2) plan.push_back({CollectiveFault::Action::Hang, 0, 2500ms});
    auto link = FaultyCommunicator::wrap(c->global_rank() == 0 ? a : b, plan);
    at::Tensor t = at::ones({3});
    if (c->global_rank() == 1) std::this_thread::sleep_for(50ms);  // rank 0 waits before rank 1 does
    link->all_reduce(t, ReduceOp::Sum);
  });
  EXPECT_TRUE(has(outcomes[0].error, "culprit: rank 2 is paused")) << outcomes[0].error;
  EXPECT_TRUE(has(outcomes[1].error, "rank 2")) << outcomes[1].error;
}

}  // namespace
}  // namespace shardfuzz::comm
