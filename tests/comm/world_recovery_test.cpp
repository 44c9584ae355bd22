// World recovery on ThreadWorld (Communicator::abort_world, recover_world): a recoverable abort
// fails every rank's collectives at once, naming the rank and its reason; after the rendezvous
// every group (splits included) works again with sequence numbers from 0; the rendezvous fails,
// naming the rank, when one has left for good or does not come within the deadline.
#include "runtime/comm/thread_world.h"
#include "tests/comm/world_test_support.h"

#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace shardfuzz::comm {
namespace {

using namespace std::chrono_literals;
using Kind = CollectiveError::Kind;
using testing_support::Fn;
using testing_support::run_world;

float summed(Communicator& comm, float value) {
  at::Tensor t = at::full({3}, value);
  comm.all_reduce(t, ReduceOp::Sum);
  return t[0].item<float>();
}

// Rank `failing` aborts the world instead of entering collective 1; its peers are inside it.
Kind abort_in_second_collective(Communicator& comm, int failing, std::string& message) {
  summed(comm, 1);
  if (comm.global_rank() == failing) {
    std::this_thread::sleep_for(20ms);  // its peers are waiting in the all-reduce by now
    comm.abort_world("out of memory in layers.3");
    return Kind::Aborted;
  }
  try {
    summed(comm, 1);
  } catch (const CollectiveError& e) {
    message = e.what();
    return e.kind;
  }
  ADD_FAILURE() << "rank " << comm.global_rank() << ": the all-reduce completed without rank " << failing;
  return Kind::Mismatch;
}

TEST(WorldRecovery, AbortFailsPeersAtOnceAndAfterTheRendezvousEveryGroupWorksFromSequenceZero) {
  constexpr int n = 4;
  std::vector<std::string> messages(n);
  std::vector<int> recoveries(n, -1);
  std::vector<float> after(n), in_half(n);
  std::vector<uint64_t> sequences(n);
  const auto t0 = std::chrono::steady_clock::now();
  const auto outcomes = run_world(n, [&](std::shared_ptr<Communicator> world) {
    const int r = world->global_rank();
    auto half = world->split(r % 2, r, "half");
    summed(*half, 1);
    EXPECT_EQ(abort_in_second_collective(*world, 2, messages[r]), Kind::Aborted);
    recoveries[r] = world->recover_world();
    after[r] = summed(*world, static_cast<float>(r));
    in_half[r] = summed(*half, 1);
    sequences[r] = world->sequence();
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok) << "rank " << o.rank << ": " << o.error;
  EXPECT_LT(seconds, 5.0) << "peers waited for the deadline instead of the abort";
  for (int r = 0; r < n; ++r) {
    if (r != 2) {
      EXPECT_NE(messages[r].find("rank 2 failed: out of memory in layers.3"), std::string::npos) << messages[r];
    }
    EXPECT_EQ(recoveries[r], 1);
    EXPECT_EQ(after[r], 0 + 1 + 2 + 3);
    EXPECT_EQ(in_half[r], 2);
    EXPECT_EQ(sequences[r], 1u) << "sequence numbers restart at 0 after a recovery";
  }
}

TEST(WorldRecovery, TwoRecoveriesInARowAndAbortsFromSeveralRanksAtOnce) {
  constexpr int n = 3;
  std::vector<int> recoveries(n);
  const auto outcomes = run_world(n, [&](std::shared_ptr<Communicator> world) {
    for (int round = 0; round < 2; ++round) {
      world->abort_world("round " + std::to_string(round) + " on rank " + std::to_string(world->global_rank()));
      try {
        summed(*world, 1);
        ADD_FAILURE() << "an aborted world ran a collective";
      } catch (const CollectiveError& e) {
        EXPECT_EQ(e.kind, Kind::Aborted);
      }
      recoveries[world->global_rank()] = world->recover_world();
    }
    EXPECT_EQ(summed(*world, 2), 6);
  });
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok) << "rank " << o.rank << ": " << o.error;
  for (int r : recoveries) EXPECT_EQ(r, 2);
}

TEST(WorldRecovery, TheRendezvousFailsNamingARankThatLeftForGood) {
  constexpr int n = 3;
  std::vector<std::string> messages(n);
  const auto outcomes = run_world(n, [&](std::shared_ptr<Communicator> world) {
    const int r = world->global_rank();
    std::string ignored;
    abort_in_second_collective(*world, 0, ignored);
    if (r == 1) throw std::runtime_error("rank 1 cannot go on");  // fails for good instead of recovering
    try {
      world->recover_world();
    } catch (const CollectiveError& e) {
      messages[r] = e.what();
      throw;
    }
  });
  EXPECT_TRUE(!outcomes[0].ok && !outcomes[1].ok && !outcomes[2].ok);
  for (int r : {0, 2}) {
    EXPECT_NE(messages[r].find("rank " + std::to_string(r) + ": recovery of the world failed"), std::string::npos)
        << messages[r];
    EXPECT_NE(messages[r].find("rank 1"), std::string::npos) << messages[r];
  }
}

TEST(WorldRecovery, TheRendezvousFailsAtTheDeadlineNamingTheRankThatDidNotCome) {
  constexpr int n = 3;
  std::vector<std::string> messages(n);
  std::vector<Kind> kinds(n, Kind::Mismatch);
  run_world(
      n,
      [&](std::shared_ptr<Communicator> world) {
        const int r = world->global_rank();
        world->abort_world("rank " + std::to_string(r) + " failed");
        if (r == 2) {
          std::this_thread::sleep_for(600ms);  // alive, but past its peers' deadline
          return;
        }
        try {
          world->recover_world();
        } catch (const CollectiveError& e) {
          messages[r] = e.what();
          kinds[r] = e.kind;
        }
      },
      300ms);
  for (int r : {0, 1}) {
    EXPECT_EQ(kinds[r], Kind::Deadline);
    EXPECT_NE(messages[r].find("waiting for ranks [2]"), std::string::npos) << messages[r];
  }
}

}  // namespace
}  // namespace shardfuzz::comm
