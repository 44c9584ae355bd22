// A scheduled ThreadWorld (comm/schedule.h): one rank thread at a time, a run that is a function of
// its schedule, switches that replay it, and deadlines and pauses on the world's own clock.
#include "runtime/comm/faulty_communicator.h"
#include "runtime/comm/thread_world.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace shardfuzz::comm {
namespace {

using namespace std::chrono_literals;

// What every rank did, in the order it happened across ranks.
struct Log {
  std::mutex mu;
  std::vector<std::string> lines;
  void add(int rank, const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back(std::to_string(rank) + ":" + what);
  }
};

struct Observed {
  std::vector<std::string> order;
  ScheduleRecord record;
  int max_running = 0;
  std::vector<RankOutcome> outcomes;
};

// World 4: two subgroups ({0,1}, {2,3}) and the world, so ranks of different groups can interleave
// in many orders; every stretch between collectives logs, and counts the ranks running at once.
Observed run_mesh(std::optional<Schedule> schedule) {
  Log log;
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  const auto stretch = [&](int rank, const std::string& what) {
    const int now = ++running;
    int seen = max_running.load();
    while (now > seen && !max_running.compare_exchange_weak(seen, now)) {
    }
    log.add(rank, what);
    std::this_thread::sleep_for(100us);  // long enough that free threads would overlap
    --running;
  };
  ThreadWorld world({4, 10000ms, schedule});
  Observed o;
  o.outcomes = world.run([&](std::shared_ptr<Communicator> c) {
    const int r = c->global_rank();
    auto pair = c->split(r / 2, r, "pair");
    for (int i = 0; i < 3; ++i) {
      stretch(r, "before pair " + std::to_string(i));
      at::Tensor t = at::full({4}, static_cast<float>(r + i));
      pair->all_reduce(t, ReduceOp::Sum);
      stretch(r, "after pair " + std::to_string(i) + " = " + std::to_string(t[0].item<float>()));
    }
    at::Tensor t = at::full({2}, static_cast<float>(r));
    c->all_reduce(t, ReduceOp::Sum);
    stretch(r, "after world = " + std::to_string(t[0].item<float>()));
  });
  o.order = log.lines;
  o.record = world.schedule_record();
  o.max_running = max_running.load();
  return o;
}

void expect_all_ok(const Observed& o) {
  for (const auto& r : o.outcomes) EXPECT_TRUE(r.ok) << "rank " << r.rank << ": " << r.error;
}

TEST(Schedule, RunsOneRankThreadAtATimeAndRecordsItsDecisions) {
  const Observed o = run_mesh(Schedule{});
  expect_all_ok(o);
  EXPECT_EQ(o.max_running, 1);
  EXPECT_TRUE(o.record.scheduled);
  EXPECT_GT(o.record.decisions, 0u);
  EXPECT_TRUE(o.record.switches.empty()) << "the canonical schedule never takes another candidate";
  EXPECT_EQ(o.order.size(), 4u * 7u);
}

TEST(Schedule, TheSameScheduleGivesTheSameRunEveryTime) {
  const Schedule seeded{12345, {}};
  const Observed first = run_mesh(seeded);
  expect_all_ok(first);
  for (int i = 0; i < 20; ++i) {
    const Observed again = run_mesh(seeded);
    ASSERT_EQ(again.order, first.order) << "run " << i;
    ASSERT_EQ(again.record.fingerprint, first.record.fingerprint) << "run " << i;
  }
}

TEST(Schedule, ARecordsSwitchesReplayItExactlyWithSeedZero) {
  for (uint64_t seed : {7u, 99u, 2024u, 31337u}) {
    const Observed drawn = run_mesh(Schedule{seed, {}});
    expect_all_ok(drawn);
    const Observed replayed = run_mesh(Schedule{0, drawn.record.switches});
    EXPECT_EQ(replayed.order, drawn.order) << "seed " << seed;
    EXPECT_EQ(replayed.record.fingerprint, drawn.record.fingerprint) << "seed " << seed;
    EXPECT_EQ(replayed.record.switches, drawn.record.switches) << "seed " << seed;
  }
}

TEST(Schedule, SeedsExploreOtherInterleavings) {
  const Observed canonical = run_mesh(Schedule{});
  std::set<std::vector<std::string>> orders{canonical.order};
  std::set<uint64_t> fingerprints{canonical.record.fingerprint};
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const Observed o = run_mesh(Schedule{seed, {}});
    expect_all_ok(o);
    EXPECT_EQ(o.max_running, 1);
    orders.insert(o.order);
    fingerprints.insert(o.record.fingerprint);
  }
  EXPECT_GE(orders.size(), 4u) << "13 schedules gave only " << orders.size() << " interleavings";
  EXPECT_GE(fingerprints.size(), orders.size());
}

TEST(Schedule, UnscheduledWorldsRecordNothing) {
  const Observed o = run_mesh(std::nullopt);
  expect_all_ok(o);
  EXPECT_FALSE(o.record.scheduled);
}

TEST(Schedule, AHangCostsNoWallTimeAndTheDeadlineFiresOnTheWorldsClock) {
  const auto start = std::chrono::steady_clock::now();
  ThreadWorld world({3, 5000ms, Schedule{}});
  const auto outcomes = world.run([](std::shared_ptr<Communicator> c) {
    std::vector<CollectiveFault> plan;
    if (c->global_rank() == 1) plan.push_back({CollectiveFault::Action::Hang, 1, 8000ms});
    auto faulty = FaultyCommunicator::wrap(c, plan);
    faulty->barrier();
    faulty->barrier();
  });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(wall, 2.0) << "a 5 s deadline and an 8 s hang must not be waited out";
  const ScheduleRecord record = world.schedule_record();
  EXPECT_EQ(record.clock_ms, 8000) << "the clock jumps to the deadline (5 s), then to the hang's end (8 s)";
  for (const auto& o : outcomes) {
    ASSERT_FALSE(o.ok) << "rank " << o.rank;
    if (o.rank != 1) EXPECT_NE(o.error.find("deadline of 5000 ms exceeded"), std::string::npos) << o.error;
    if (o.rank != 1) EXPECT_NE(o.error.find("missing ranks [1"), std::string::npos) << o.error;
  }
}

TEST(Schedule, AStragglerUnderTheDeadlineCostsNothing) {
  const auto start = std::chrono::steady_clock::now();
  ThreadWorld world({2, 5000ms, Schedule{}});
  const auto outcomes = world.run([](std::shared_ptr<Communicator> c) {
    std::vector<CollectiveFault> plan;
    if (c->global_rank() == 0) plan.push_back({CollectiveFault::Action::Delay, 0, 3000ms});
    auto faulty = FaultyCommunicator::wrap(c, plan);
    at::Tensor t = at::ones({2});
    faulty->all_reduce(t, ReduceOp::Sum);
    if (t[0].item<float>() != 2.0f) throw std::runtime_error("wrong sum");
  });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok) << o.error;
  EXPECT_EQ(world.schedule_record().clock_ms, 3000);
}

TEST(Schedule, RecoveryRendezvousWorksUnderASchedule) {
  for (uint64_t seed : {0u, 5u, 77u}) {
    ThreadWorld world({3, 5000ms, Schedule{seed, {}}});
    std::vector<int> epochs(3, 0);
    const auto outcomes = world.run([&](std::shared_ptr<Communicator> c) {
      const int r = c->global_rank();
      if (r == 2) c->abort_world("rank 2 ran out of memory");
      try {
        c->barrier();
      } catch (const CollectiveError& e) {
        if (e.kind != CollectiveError::Kind::Aborted) throw;
      }
      epochs[static_cast<size_t>(r)] = c->recover_world();
      at::Tensor t = at::ones({1});
      c->all_reduce(t, ReduceOp::Sum);
      if (t.item<float>() != 3.0f) throw std::runtime_error("wrong sum after recovery");
    });
    for (const auto& o : outcomes) EXPECT_TRUE(o.ok) << "seed " << seed << ", rank " << o.rank << ": " << o.error;
    EXPECT_EQ(epochs, std::vector<int>({1, 1, 1})) << "seed " << seed;
  }
}

TEST(Schedule, ChoiceDependsOnlyOnSeedAndDecision) {
  const Schedule a{42, {}};
  Schedule b{42, {{3, 1}}};
  for (uint64_t d = 0; d < 64; ++d) {
    if (d == 3) continue;
    EXPECT_EQ(a.choose(d, 4), b.choose(d, 4)) << "decision " << d;
  }
  EXPECT_EQ(b.choose(3, 4), 1u);
  EXPECT_EQ(b.choose(3, 1), 0u) << "one candidate is no decision";
  EXPECT_EQ(Schedule{}.choose(10, 5), 0u);
}

}  // namespace
}  // namespace shardfuzz::comm
