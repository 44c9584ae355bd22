// StoreWorld: the collectives of rank processes over a store, here with ranks as threads sharing
// LibTorch's in-memory HashStore (the same code paths as the TCPStore of real rank processes).
#include "runtime/comm/store_world.h"
#include "runtime/comm/thread_world.h"
#include "world_test_support.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <functional>
#include <mutex>
#include <thread>

namespace shardfuzz::comm {
namespace {

using Fn = std::function<void(std::shared_ptr<Communicator>)>;

struct Outcome {
  bool ok = true;
  std::string error;
  CollectiveError::Kind kind = CollectiveError::Kind::Mismatch;
  bool collective_error = false;
};

std::vector<Outcome> run_store_world(int n, const Fn& fn, std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<Outcome> out(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      auto world = connect_store_world(store, {r, n, deadline, "test"});
      try {
        fn(world);
      } catch (const CollectiveError& e) {
        out[r] = {false, e.what(), e.kind, true};
      } catch (const std::exception& e) {
        out[r] = {false, e.what()};
      }
    });
  for (auto& t : threads) t.join();
  return out;
}

TEST(StoreWorld, CollectivesMatchThreadWorldBitForBit) {
  // The same random inputs through both worlds: every result equal to the last bit.
  auto body = [](std::vector<at::Tensor>& results) {
    return [&results](std::shared_ptr<Communicator> c) {
      const int r = c->rank(), n = c->size();
      at::Tensor x = at::randn({12}, at::detail::getDefaultCPUGenerator().clone()) * (r + 1);
      at::Tensor gathered = at::empty({12 * n});
      c->all_gather_into_tensor(gathered, x);
      at::Tensor scattered = at::empty({12 / n});
      c->reduce_scatter_tensor(scattered, x, ReduceOp::Avg);
      at::Tensor summed = x.clone();
      c->all_reduce(summed, ReduceOp::Sum);
      at::Tensor rows = at::arange(n * 3, at::kFloat).reshape({n, 3}) + 100 * r;
      at::Tensor exchanged = at::empty_like(rows);
      c->all_to_all_single(exchanged, rows, {}, {});
      at::Tensor b = at::full({2}, static_cast<float>(r));
      c->broadcast(b, n - 1);
      static std::mutex mu;
      std::lock_guard<std::mutex> lock(mu);
      results[static_cast<std::size_t>(r) * 5 + 0] = gathered;
      results[static_cast<std::size_t>(r) * 5 + 1] = scattered;
      results[static_cast<std::size_t>(r) * 5 + 2] = summed;
      results[static_cast<std::size_t>(r) * 5 + 3] = exchanged;
      results[static_cast<std::size_t>(r) * 5 + 4] = b;
    };
  };
  std::vector<at::Tensor> via_store(20), via_threads(20);
  for (const auto& o : run_store_world(4, body(via_store))) ASSERT_TRUE(o.ok) << o.error;
  for (const auto& o : testing_support::run_world(4, body(via_threads))) ASSERT_TRUE(o.ok) << o.error;
  for (std::size_t i = 0; i < via_store.size(); ++i) EXPECT_TRUE(at::equal(via_store[i], via_threads[i])) << "result " << i;
}

TEST(StoreWorld, SplitMakesMeshGroupsOrderedByKey) {
  std::vector<std::vector<int>> members(4);
  auto out = run_store_world(4, [&](std::shared_ptr<Communicator> c) {
    auto g = c->split(c->rank() % 2, -c->rank(), "dp");
    ASSERT_TRUE(g);
    members[static_cast<std::size_t>(c->rank())] = g->global_ranks();
    at::Tensor t = at::full({1}, static_cast<float>(c->rank()));
    g->all_reduce(t, ReduceOp::Sum);
    EXPECT_EQ(t.item<float>(), c->rank() % 2 == 0 ? 2.0f : 4.0f);
    EXPECT_EQ(g->name(), "dp");
  });
  for (const auto& o : out) ASSERT_TRUE(o.ok) << o.error;
  EXPECT_EQ(members[0], (std::vector<int>{2, 0}));
  EXPECT_EQ(members[1], (std::vector<int>{3, 1}));
}

TEST(StoreWorld, MismatchNamesBothRanksAndTheirCalls) {
  auto out = run_store_world(2, [](std::shared_ptr<Communicator> c) {
    at::Tensor t = at::ones({c->rank() == 0 ? 4 : 5});
    c->all_reduce(t, ReduceOp::Sum);
  });
  for (const auto& o : out) {
    ASSERT_FALSE(o.ok);
    EXPECT_EQ(o.kind, CollectiveError::Kind::Mismatch);
    EXPECT_NE(o.error.find("rank 0 called all_reduce(shape=[4], float, sum) but rank 1 called all_reduce(shape=[5]"),
              std::string::npos)
        << o.error;
  }
}

TEST(StoreWorld, ARankThatNeverComesFailsTheRoundForEveryoneAtTheDeadline) {
  auto out = run_store_world(
      3,
      [](std::shared_ptr<Communicator> c) {
        if (c->rank() == 2) return;  // never enters
        c->barrier();
      },
      std::chrono::milliseconds(300));
  for (int r = 0; r < 2; ++r) {
    ASSERT_FALSE(out[r].ok);
    EXPECT_EQ(out[r].kind, CollectiveError::Kind::Deadline);
    EXPECT_NE(out[r].error.find("missing ranks [2]"), std::string::npos) << out[r].error;
  }
}

// Culprit attribution across groups (comm/wait_for.h) on the store: rank 0 waits in 'a' = {0, 1}
// on rank 1, rank 1 waits in 'b' = {1, 2} on rank 2, rank 2 is paused (a planned hang). Rank `late`
// (0 or 1) enters its collective `delay` after the other, so the other's deadline fires first.
std::vector<Outcome> run_chain_of_three(int late, std::chrono::milliseconds delay, std::chrono::milliseconds deadline) {
  return run_store_world(
      3,
      [&](std::shared_ptr<Communicator> c) {
        const int me = c->global_rank();
        auto a = c->split(me <= 1 ? 0 : -1, me, "a");
        auto b = c->split(me >= 1 ? 0 : -1, me, "b");
        at::Tensor t = at::ones({3});
        if (me == late) std::this_thread::sleep_for(delay);
        if (me == 0) a->all_reduce(t, ReduceOp::Sum);
        if (me == 1) b->all_reduce(t, ReduceOp::Sum);
        if (me == 2) c->pause(std::chrono::milliseconds(2500));
      },
      deadline);
}

// Rank 0's error follows the chain.
TEST(StoreWorld, ATimedOutRankNamesTheCulpritAcrossGroupsWithTheChain) {
  auto out = run_chain_of_three(1, std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
  ASSERT_FALSE(out[0].ok);
  EXPECT_EQ(out[0].kind, CollectiveError::Kind::Deadline);
  EXPECT_NE(out[0].error.find("culprit: rank 2 is paused, in no collective"), std::string::npos) << out[0].error;
  EXPECT_NE(out[0].error.find("rank 0 is waiting on rank 1 in 'a' at sequence 0 (all_reduce(shape=[3], float, sum)); "
                              "rank 1 is waiting on rank 2 in 'b' at sequence 0"),
            std::string::npos)
      << out[0].error;
  ASSERT_FALSE(out[1].ok);
  EXPECT_NE(out[1].error.find("rank 2"), std::string::npos) << out[1].error;
}

// On the wall clock a peer's deadline can fire after the rank it waits on has already failed: that
// rank stays a waiter in the graph, so the chain still reaches the culprit (a world-8 hang named it
// on 7 ranks of 8 before).
TEST(StoreWorld, APeerWhoseDeadlineFiresLaterFollowsTheChainThroughARankThatFailedFirst) {
  auto out = run_chain_of_three(0, std::chrono::milliseconds(300), std::chrono::milliseconds(800));
  ASSERT_FALSE(out[1].ok);
  ASSERT_FALSE(out[0].ok);
  EXPECT_NE(out[0].error.find("culprit: rank 2 is paused"), std::string::npos) << out[0].error;
  EXPECT_NE(out[0].error.find("rank 1 is waiting on rank 2 in 'b' at sequence 0"), std::string::npos) << out[0].error;
}

TEST(StoreWorld, ALateRankFailsTheRoundItsPeersGaveUpOn) {
  auto out = run_store_world(
      2,
      [](std::shared_ptr<Communicator> c) {
        if (c->rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(600));
        c->barrier();
      },
      std::chrono::milliseconds(200));
  ASSERT_FALSE(out[1].ok) << "rank 1 came after rank 0 gave up: the round failed for it too";
  EXPECT_EQ(out[1].kind, CollectiveError::Kind::Deadline);
  EXPECT_NE(out[1].error.find("rank 0 gave up waiting"), std::string::npos) << out[1].error;
}

TEST(StoreWorld, AbortThenRecoverRestartsSequencesAndWorksAgain) {
  auto out = run_store_world(3, [](std::shared_ptr<Communicator> c) {
    if (c->rank() == 1) {
      c->abort_world("out of memory in backward");
    } else {
      at::Tensor t = at::ones({2});
      try {
        c->all_reduce(t, ReduceOp::Sum);
        ADD_FAILURE() << "the aborted collective completed";
      } catch (const CollectiveError& e) {
        EXPECT_EQ(e.kind, CollectiveError::Kind::Aborted);
        EXPECT_NE(std::string(e.what()).find("aborted: rank 1 aborted it: out of memory in backward"), std::string::npos)
            << e.what();
      }
    }
    EXPECT_EQ(c->recover_world(), 1);
    EXPECT_EQ(c->sequence(), 0u);
    at::Tensor t = at::ones({2});
    c->all_reduce(t, ReduceOp::Sum);
    EXPECT_EQ(t[0].item<float>(), 3.0f);
  });
  for (const auto& o : out) EXPECT_TRUE(o.ok) << o.error;
}

TEST(StoreWorld, RecoveryFailsNamingTheRankThatLeft) {
  auto out = run_store_world(2, [](std::shared_ptr<Communicator> c) {
    if (c->rank() == 0) {
      leave_store_world(*c, "injected collective error");
      return;
    }
    c->recover_world();
  });
  ASSERT_FALSE(out[1].ok);
  EXPECT_EQ(out[1].kind, CollectiveError::Kind::Aborted);
  EXPECT_NE(out[1].error.find("rank 0 left: injected collective error"), std::string::npos) << out[1].error;
}

TEST(StoreWorld, InvalidArgumentsFailOnEveryRankNamingTheOffender) {
  auto out = run_store_world(2, [](std::shared_ptr<Communicator> c) {
    at::Tensor in = at::ones({4});
    at::Tensor outp = at::empty({c->rank() == 1 ? 7 : 8});
    c->all_gather_into_tensor(outp, in);
  });
  for (const auto& o : out) {
    ASSERT_FALSE(o.ok);
    EXPECT_EQ(o.kind, CollectiveError::Kind::InvalidArgument);
    EXPECT_NE(o.error.find("on rank 1"), std::string::npos) << o.error;
  }
}

TEST(StoreWorld, ConnectRefusesARankOutsideTheWorld) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  EXPECT_THROW(connect_store_world(store, {3, 2, std::chrono::seconds(1), "x"}), std::invalid_argument);
}

}  // namespace
}  // namespace shardfuzz::comm
