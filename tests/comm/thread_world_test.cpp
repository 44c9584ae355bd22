// ThreadWorld: every collective at world sizes 1..8 with odd sizes and exact expected values, plus
// the failure verdicts (mismatch, invalid argument, deadline, exited rank, abort).
#include "runtime/comm/thread_world.h"
#include "tests/comm/world_test_support.h"
#include "runtime/comm/rank_context.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

namespace shardfuzz::comm {
namespace {

using namespace std::chrono_literals;
using Kind = CollectiveError::Kind;
using testing_support::Fn;
using testing_support::run_world;

void run_all_ok(int n, const Fn& fn) {
  for (const auto& o : run_world(n, fn)) EXPECT_TRUE(o.ok) << "world " << n << " rank " << o.rank << ": " << o.error;
}

const std::vector<at::ScalarType> kAllDtypes = {at::kFloat, at::kDouble, at::kBFloat16,
                                                at::kHalf,  at::kLong,   at::kByte};
const std::vector<int64_t> kOddSizes = {0, 1, 7, 13};

// Small non-negative integers, exact in every dtype above (bfloat16 holds integers up to 256).
at::Tensor rank_values(int rank, int64_t numel, at::ScalarType dtype) {
  return at::arange(numel, at::kLong).remainder(11).add(rank * 17).to(dtype);
}

bool same(const at::Tensor& a, const at::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() && a.equal(b);
}

// Each rank records the CollectiveError it caught, so the main thread can check every rank.
struct Caught {
  std::mutex mu;
  std::vector<std::optional<CollectiveError>> errors;
  std::vector<double> seconds;
  explicit Caught(int n) : errors(n), seconds(n, -1) {}
  template <class F>
  void record(int rank, F&& f) {
    const auto start = std::chrono::steady_clock::now();
    try {
      f();
    } catch (const CollectiveError& e) {
      std::lock_guard<std::mutex> lock(mu);
      errors[rank] = e;
      seconds[rank] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
};

TEST(ThreadWorld, RejectsBadWorldSize) {
  for (int bad : {0, -1, 1025}) {
    try {
      ThreadWorld world(ThreadWorldOptions{bad});
      FAIL() << "world_size " << bad << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("world_size"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(ThreadWorld(ThreadWorldOptions{2, 0ms}), std::invalid_argument);
}

TEST(ThreadWorld, RankThreadsKnowTheirRank) {
  EXPECT_EQ(current_thread_rank(), -1);
  std::vector<int> seen(5, -2);
  run_all_ok(5, [&](std::shared_ptr<Communicator> world) {
    seen[world->rank()] = current_thread_rank();
    EXPECT_EQ(world->global_rank(), world->rank());
    EXPECT_EQ(world->size(), 5);
    EXPECT_EQ(world->name(), "world");
  });
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(current_thread_rank(), -1);
}

TEST(ThreadWorld, AllGatherEveryDtypeAndOddSize) {
  for (int n = 1; n <= 8; ++n) {
    run_all_ok(n, [&](std::shared_ptr<Communicator> world) {
      for (auto dtype : kAllDtypes) {
        for (int64_t numel : kOddSizes) {
          std::vector<at::Tensor> parts;
          for (int r = 0; r < n; ++r) parts.push_back(rank_values(r, numel, dtype));
          const at::Tensor expected = at::cat(parts);
          at::Tensor input = rank_values(world->rank(), numel, dtype);
          at::Tensor output = at::zeros({n * numel}, dtype);
          world->all_gather_into_tensor(output, input);
          EXPECT_TRUE(same(output, expected)) << "n=" << n << " numel=" << numel << " " << dtype;
          // In place, as FSDP does it: the input is this rank's chunk of the output.
          at::Tensor flat = at::zeros({n * numel}, dtype);
          at::Tensor chunk = flat.narrow(0, world->rank() * numel, numel);
          chunk.copy_(input);
          world->all_gather_into_tensor(flat, chunk);
          EXPECT_TRUE(same(flat, expected)) << "in place n=" << n << " numel=" << numel << " " << dtype;
        }
      }
    });
  }
}

// The reference: every rank's input summed in rank order 0..n-1 in the dtype itself, then divided.
at::Tensor ordered_reduce(const std::vector<at::Tensor>& inputs, ReduceOp op) {
  at::Tensor acc = inputs[0].clone();
  for (size_t r = 1; r < inputs.size(); ++r) acc.add_(inputs[r]);
  if (op == ReduceOp::Avg) {
    if (c10::isIntegralType(acc.scalar_type(), false))
      acc.div_(static_cast<int64_t>(inputs.size()), "trunc");
    else
      acc.div_(static_cast<int64_t>(inputs.size()));
  }
  return acc;
}

// Fractional values, so that the summation order shows in the low bits.
at::Tensor fractional_values(int rank, int64_t numel, at::ScalarType dtype) {
  return at::arange(numel, at::kDouble).mul(0.37).add(rank * 1.3).sin().to(dtype);
}

TEST(ThreadWorld, ReduceScatterSumAndAvgAreOrderedAndExact) {
  const std::vector<at::ScalarType> dtypes = {at::kFloat, at::kDouble, at::kBFloat16, at::kHalf, at::kLong};
  for (int n = 1; n <= 8; ++n) {
    run_all_ok(n, [&](std::shared_ptr<Communicator> world) {
      const int me = world->rank();
      for (auto dtype : dtypes) {
        for (int64_t chunk : kOddSizes) {
          for (auto op : {ReduceOp::Sum, ReduceOp::Avg}) {
            const bool fractional = c10::isFloatingType(dtype);
            std::vector<at::Tensor> inputs;
            for (int r = 0; r < n; ++r)
              inputs.push_back(fractional ? fractional_values(r, n * chunk, dtype) : rank_values(r, n * chunk, dtype));
            const at::Tensor expected = ordered_reduce(inputs, op).narrow(0, me * chunk, chunk);
            at::Tensor output = at::empty({chunk}, dtype);
            world->reduce_scatter_tensor(output, inputs[me], op);
            EXPECT_TRUE(same(output, expected))
                << "n=" << n << " chunk=" << chunk << " " << dtype << " " << to_string(op);
            // In place: the output is this rank's chunk of the input.
            at::Tensor flat = inputs[me].clone();
            at::Tensor out_view = flat.narrow(0, me * chunk, chunk);
            world->reduce_scatter_tensor(out_view, flat, op);
            EXPECT_TRUE(same(out_view, expected)) << "in place n=" << n << " chunk=" << chunk << " " << dtype;
          }
        }
      }
    });
  }
}

TEST(ThreadWorld, AllReduceSumAndAvgAgreeBitwiseOnEveryRank) {
  const std::vector<at::ScalarType> dtypes = {at::kFloat, at::kDouble, at::kBFloat16, at::kHalf, at::kLong};
  for (int n = 1; n <= 8; ++n) {
    run_all_ok(n, [&](std::shared_ptr<Communicator> world) {
      const int me = world->rank();
      for (auto dtype : dtypes) {
        for (int64_t numel : kOddSizes) {
          for (auto op : {ReduceOp::Sum, ReduceOp::Avg}) {
            const bool fractional = c10::isFloatingType(dtype);
            std::vector<at::Tensor> inputs;
            for (int r = 0; r < n; ++r) {
              at::Tensor v = fractional ? fractional_values(r, numel, dtype) : rank_values(r, numel, dtype);
              inputs.push_back(v.view({numel, 1}));
            }
            at::Tensor tensor = inputs[me].clone();
            world->all_reduce(tensor, op);
            EXPECT_TRUE(same(tensor, ordered_reduce(inputs, op)))
                << "n=" << n << " numel=" << numel << " " << dtype << " " << to_string(op);
          }
        }
      }
      // Integer avg truncates, as NCCL's does: ranks hold 0..n-1, the sum n(n-1)/2, avg (n-1)/2.
      at::Tensor t = at::full({3}, me, at::kLong);
      world->all_reduce(t, ReduceOp::Avg);
      EXPECT_TRUE(same(t, at::full({3}, (n - 1) / 2, at::kLong)));
    });
  }
}

TEST(ThreadWorld, AllToAllUnevenSplitsWithEmptyOnes) {
  // rows(i -> j) = (i + 2j) % 3, so some pairs exchange nothing; each row of 3 values names its
  // source, destination and index, so misplaced rows show.
  const auto rows = [](int i, int j) -> int64_t { return (i + 2 * j) % 3; };
  const auto row_value = [](int i, int j, int64_t k) { return i * 1000 + j * 10 + k; };
  for (int n = 1; n <= 8; ++n) {
    run_all_ok(n, [&](std::shared_ptr<Communicator> world) {
      const int me = world->rank();
      for (auto dtype : {at::kLong, at::kFloat, at::kBFloat16}) {
        std::vector<int64_t> send, recv;
        std::vector<at::Tensor> in_rows, out_rows;
        for (int j = 0; j < n; ++j) {
          send.push_back(rows(me, j));
          recv.push_back(rows(j, me));
          for (int64_t k = 0; k < rows(me, j); ++k)
            in_rows.push_back(at::full({1, 3}, row_value(me, j, k) % 200, at::kLong));
          for (int64_t k = 0; k < rows(j, me); ++k)
            out_rows.push_back(at::full({1, 3}, row_value(j, me, k) % 200, at::kLong));
        }
        const auto stack = [&](std::vector<at::Tensor>& v) {
          return v.empty() ? at::empty({0, 3}, dtype) : at::cat(v).to(dtype);
        };
        at::Tensor input = stack(in_rows), expected = stack(out_rows);
        at::Tensor output = at::full(expected.sizes(), -1, dtype);
        world->all_to_all_single(output, input, recv, send);
        EXPECT_TRUE(same(output, expected)) << "n=" << n << " rank " << me << " " << dtype;
      }
      // Empty split vectors: equal split of 2 rows per peer.
      at::Tensor input = at::arange(2 * n * 2, at::kLong).view({2 * n, 2}).add(me * 100);
      at::Tensor output = at::empty({2 * n, 2}, at::kLong);
      world->all_to_all_single(output, input, {}, {});
      for (int j = 0; j < n; ++j) {
        at::Tensor from_j = at::arange(2 * n * 2, at::kLong).view({2 * n, 2}).add(j * 100).narrow(0, 2 * me, 2);
        EXPECT_TRUE(same(output.narrow(0, 2 * j, 2), from_j)) << "n=" << n << " rank " << me << " from " << j;
      }
    });
  }
}

TEST(ThreadWorld, AllToAllSplitDisagreementNamesBothRanks) {
  Caught caught(3);
  run_world(3, [&](std::shared_ptr<Communicator> world) {
    const int me = world->rank();
    // Everyone sends 1 row to everyone, but rank 1 expects 2 rows from rank 0 (and 0 from rank 2).
    std::vector<int64_t> recv = me == 1 ? std::vector<int64_t>{2, 1, 0} : std::vector<int64_t>{1, 1, 1};
    at::Tensor input = at::zeros({3, 2});
    at::Tensor output = at::zeros({3, 2});
    caught.record(me, [&] { world->all_to_all_single(output, input, recv, {1, 1, 1}); });
  });
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(caught.errors[r]) << "rank " << r;
    EXPECT_EQ(caught.errors[r]->kind, Kind::Mismatch);
    EXPECT_EQ(caught.errors[r]->rank, r);
    EXPECT_STREQ(caught.errors[r]->what(),
                 "all_to_all_single split mismatch in group 'world' at sequence 0: rank 0 sends 1 rows to rank 1 "
                 "but rank 1 expects 2 rows from rank 0");
  }
}

TEST(ThreadWorld, BroadcastFromAnyRoot) {
  for (int n = 1; n <= 8; ++n) {
    run_all_ok(n, [&](std::shared_ptr<Communicator> world) {
      for (int root : {0, n - 1, n / 2}) {
        for (auto dtype : {at::kByte, at::kFloat, at::kHalf}) {
          at::Tensor t = rank_values(world->rank(), 13, dtype).view({13, 1});
          world->broadcast(t, root);
          EXPECT_TRUE(same(t, rank_values(root, 13, dtype).view({13, 1}))) << "n=" << n << " root=" << root;
        }
      }
    });
  }
}

TEST(ThreadWorld, SequenceCountsEveryCollectiveEvenAlone) {
  run_all_ok(1, [&](std::shared_ptr<Communicator> world) {
    EXPECT_EQ(world->sequence(), 0u);
    world->barrier();
    at::Tensor t = at::full({7}, 3.0);
    world->all_reduce(t, ReduceOp::Avg);
    EXPECT_TRUE(same(t, at::full({7}, 3.0)));
    at::Tensor out = at::zeros({7});
    world->all_gather_into_tensor(out, t);
    EXPECT_TRUE(same(out, t));
    EXPECT_EQ(world->sequence(), 3u);
  });
}

TEST(ThreadWorld, SplitFormsOrderedSubgroups) {
  run_all_ok(8, [&](std::shared_ptr<Communicator> world) {
    const int me = world->rank();
    // Key -me reverses the order inside each parity group.
    auto parity = world->split(me % 2, -me, "parity");
    ASSERT_TRUE(parity);
    const std::vector<int> expected = me % 2 ? std::vector<int>{7, 5, 3, 1} : std::vector<int>{6, 4, 2, 0};
    EXPECT_EQ(parity->global_ranks(), expected);
    EXPECT_EQ(parity->global_ranks()[parity->rank()], me);
    EXPECT_EQ(parity->global_rank(), me);
    EXPECT_EQ(parity->name(), "parity");
    EXPECT_EQ(parity->sequence(), 0u);
    at::Tensor t = at::full({5}, me, at::kLong);
    parity->all_reduce(t, ReduceOp::Sum);
    EXPECT_TRUE(same(t, at::full({5}, me % 2 ? 16 : 12, at::kLong)));

    // Splitting a subgroup, with some ranks opting out.
    auto pairs = parity->split(parity->rank() < 2 ? 0 : -1, 0, "pairs");
    EXPECT_EQ(static_cast<bool>(pairs), parity->rank() < 2);
    if (pairs) {
      EXPECT_EQ(pairs->global_ranks(), me % 2 ? std::vector<int>({7, 5}) : std::vector<int>({6, 4}));
      at::Tensor out = at::zeros({2}, at::kLong);
      pairs->all_gather_into_tensor(out, at::full({1}, me, at::kLong));
      const int first = me % 2 ? 7 : 6;
      EXPECT_TRUE(same(out, at::cat({at::full({1}, first, at::kLong), at::full({1}, first - 2, at::kLong)})));
    }
    world->barrier();  // the parent group keeps its own sequence
    EXPECT_EQ(world->sequence(), 2u);
  });
}

TEST(ThreadWorld, MismatchFailsEveryRankNamingBothRanksOpAndSequence) {
  Caught caught(4);
  std::vector<int> after(4, 0);
  run_world(4, [&](std::shared_ptr<Communicator> world) {
    const int me = world->rank();
    world->barrier();
    at::Tensor flat = at::zeros({24});
    at::Tensor shard = at::zeros({6});
    caught.record(me, [&] {
      if (me == 2)
        world->reduce_scatter_tensor(shard, flat, ReduceOp::Sum);
      else
        world->all_gather_into_tensor(flat, shard);
    });
    // Every rank failed the same round, so the group stays consistent and usable.
    world->barrier();
    after[me] = 1;
  });
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(caught.errors[r]) << "rank " << r;
    const auto& e = *caught.errors[r];
    EXPECT_EQ(e.kind, Kind::Mismatch);
    EXPECT_EQ(e.sequence, 1u);
    EXPECT_EQ(e.group, "world");
    EXPECT_EQ(e.rank, r);
    EXPECT_EQ(e.op, r == 2 ? "reduce_scatter_tensor" : "all_gather_into_tensor");
    EXPECT_STREQ(e.what(),
                 "collective mismatch in group 'world' at sequence 1: rank 0 called all_gather_into_tensor(numel=6, "
                 "float) but rank 2 called reduce_scatter_tensor(numel=24, float, sum)");
  }
  EXPECT_EQ(after, (std::vector<int>{1, 1, 1, 1}));
}

TEST(ThreadWorld, MismatchedDtypeSizeAndReduceOp) {
  struct Case {
    std::function<void(Communicator&, int)> call;
    std::string odd_one;  // what rank 1 called
  };
  const std::vector<Case> cases = {
      {[](Communicator& c, int me) {
         at::Tensor t = at::zeros({me == 1 ? 8 : 7});
         c.all_reduce(t, ReduceOp::Sum);
       },
       "all_reduce(shape=[8], float, sum)"},
      {[](Communicator& c, int me) {
         at::Tensor t = at::zeros({7}, me == 1 ? at::kDouble : at::kFloat);
         c.all_reduce(t, ReduceOp::Sum);
       },
       "all_reduce(shape=[7], double, sum)"},
      {[](Communicator& c, int me) {
         at::Tensor t = at::zeros({7});
         c.all_reduce(t, me == 1 ? ReduceOp::Avg : ReduceOp::Sum);
       },
       "all_reduce(shape=[7], float, avg)"},
      {[](Communicator& c, int me) {
         at::Tensor t = at::zeros({7});
         c.broadcast(t, me == 1 ? 1 : 0);
       },
       "broadcast(shape=[7], float, root=1)"},
  };
  for (const auto& c : cases) {
    Caught caught(3);
    run_world(3, [&](std::shared_ptr<Communicator> world) {
      caught.record(world->rank(), [&] { c.call(*world, world->rank()); });
    });
    for (int r = 0; r < 3; ++r) {
      ASSERT_TRUE(caught.errors[r]) << c.odd_one << " rank " << r;
      EXPECT_EQ(caught.errors[r]->kind, Kind::Mismatch);
      const std::string what = caught.errors[r]->what();
      EXPECT_NE(what.find("but rank 1 called " + c.odd_one), std::string::npos) << what;
      EXPECT_NE(what.find("rank 0 called"), std::string::npos) << what;
    }
  }
}

TEST(ThreadWorld, InvalidArgumentsFailTheCallerAtOnceAndPeersByName) {
  Caught caught(3);
  run_world(3, [&](std::shared_ptr<Communicator> world) {
    const int me = world->rank();
    at::Tensor t = me == 1 ? at::zeros({4, 3}).t() : at::zeros({3, 4});
    caught.record(me, [&] { world->all_reduce(t, ReduceOp::Sum); });
  });
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(caught.errors[r]) << "rank " << r;
    EXPECT_EQ(caught.errors[r]->kind, Kind::InvalidArgument);
    EXPECT_EQ(caught.errors[r]->rank, r);
    EXPECT_STREQ(caught.errors[r]->what(),
                 "invalid arguments to all_reduce on rank 1 in group 'world' at sequence 0: tensor is not contiguous "
                 "(shape [3, 4], strides [1, 3])");
  }

  // Local argument errors, made by every rank of a world of two.
  const auto invalid = [](const std::function<void(Communicator&)>& call) {
    std::string what;
    run_world(2, [&](std::shared_ptr<Communicator> world) {
      try {
        call(*world);
      } catch (const CollectiveError& e) {
        EXPECT_EQ(e.kind, Kind::InvalidArgument) << e.what();
        if (world->rank() == 0) what = e.what();
      }
    });
    return what;
  };
  EXPECT_NE(invalid([](Communicator& c) {
              at::Tensor out = at::zeros({13});
              c.all_gather_into_tensor(out, at::zeros({7}));
            }).find("output has numel 13, expected 14 (input numel 7 x group size 2)"),
            std::string::npos);
  EXPECT_NE(invalid([](Communicator& c) {
              at::Tensor out = at::zeros({3});
              c.reduce_scatter_tensor(out, at::zeros({7}), ReduceOp::Sum);
            }).find("input has numel 7, expected 6"),
            std::string::npos);
  EXPECT_NE(invalid([](Communicator& c) {
              at::Tensor out = at::zeros({7});
              c.all_to_all_single(out, at::zeros({7}), {}, {});
            }).find("7 rows do not divide by group size 2"),
            std::string::npos);
  EXPECT_NE(invalid([](Communicator& c) {
              at::Tensor out = at::zeros({7});
              c.all_to_all_single(out, at::zeros({7}), {3, 4}, {3, 3});
            }).find("input_split_sizes sum to 6 but the tensor has 7 rows"),
            std::string::npos);
  EXPECT_NE(invalid([](Communicator& c) {
              at::Tensor t = at::zeros({7});
              c.broadcast(t, 2);
            }).find("root 2 is outside"),
            std::string::npos);
  EXPECT_NE(invalid([](Communicator& c) {
              at::Tensor out = at::zeros({4}, at::kDouble);
              c.all_gather_into_tensor(out, at::zeros({2}));
            }).find("output dtype double differs from input dtype float"),
            std::string::npos);
}

TEST(ThreadWorld, DeadlineFailsEveryWaitingRankAndPoisonsTheGroup) {
  constexpr int n = 4;
  Caught caught(n);
  std::atomic<int> failed{0};
  std::promise<void> others_failed;
  std::shared_future<void> released = others_failed.get_future().share();
  const auto start = std::chrono::steady_clock::now();
  run_world(
      n,
      [&](std::shared_ptr<Communicator> world) {
        const int me = world->rank();
        world->barrier();
        at::Tensor t = at::ones({7});
        if (me == 3) {
          // Skips the collective the others are in; arrives only once they have given up.
          released.wait_for(10s);
        } else {
          caught.record(me, [&] { world->all_reduce(t, ReduceOp::Sum); });
          if (++failed == n - 1) others_failed.set_value();
          return;
        }
        caught.record(me, [&] { world->all_reduce(t, ReduceOp::Sum); });
      },
      250ms);
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(total, 5.0);
  for (int r = 0; r < n - 1; ++r) {
    ASSERT_TRUE(caught.errors[r]) << "rank " << r;
    const auto& e = *caught.errors[r];
    EXPECT_EQ(e.kind, Kind::Deadline);
    EXPECT_EQ(e.sequence, 1u);
    EXPECT_EQ(e.op, "all_reduce");
    EXPECT_STREQ(e.what(),
                 "deadline of 250 ms exceeded in group 'world' at sequence 1 waiting in all_reduce(shape=[7], float, "
                 "sum): arrived ranks [0, 1, 2], missing ranks [3 (last entered sequence 0: barrier())]; culprit: "
                 "rank 3 is running outside any collective (last entered 'world' at sequence 0: barrier())");
    EXPECT_GE(caught.seconds[r], 0.2);
    EXPECT_LT(caught.seconds[r], 5.0);
  }
  // The latecomer fails at once rather than after a deadline of its own.
  ASSERT_TRUE(caught.errors[3]);
  EXPECT_EQ(caught.errors[3]->kind, Kind::Deadline);
  EXPECT_NE(std::string(caught.errors[3]->what()).find("group 'world' is unusable after an earlier failure: deadline"),
            std::string::npos)
      << caught.errors[3]->what();
  EXPECT_LT(caught.seconds[3], 0.2);
}

TEST(ThreadWorld, RankThatReturnedEarlyFailsItsPeersWithoutWaiting) {
  Caught caught(3);
  const auto outcomes = run_world(3, [&](std::shared_ptr<Communicator> world) {
    if (world->rank() == 2) return;
    caught.record(world->rank(), [&] { world->barrier(); });
  });  // default 10 s deadline in run_world: passing quickly proves it was not waited out
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(caught.errors[r]) << "rank " << r;
    EXPECT_EQ(caught.errors[r]->kind, Kind::Deadline);
    EXPECT_NE(std::string(caught.errors[r]->what()).find("rank 2 returned from its rank function without entering it"),
              std::string::npos)
        << caught.errors[r]->what();
    EXPECT_LT(caught.seconds[r], 5.0);
  }
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok);
}

TEST(ThreadWorld, ThrowingRankAbortsTheWorld) {
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = ThreadWorld(ThreadWorldOptions{4}).run([&](std::shared_ptr<Communicator> world) {
    world->barrier();
    if (world->rank() == 2) throw std::runtime_error("boom");
    at::Tensor t = at::ones({3});
    world->all_reduce(t, ReduceOp::Sum);
  });
  // The default 30 s deadline was not waited out.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  ASSERT_EQ(outcomes.size(), 4u);
  EXPECT_FALSE(outcomes[2].ok);
  EXPECT_EQ(outcomes[2].error, "boom");
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(outcomes[r].rank, r);
    EXPECT_FALSE(outcomes[r].ok);
    EXPECT_EQ(outcomes[r].error, "all_reduce at sequence 1 in group 'world' aborted: rank 2 failed: boom");
    try {
      std::rethrow_exception(outcomes[r].exception);
    } catch (const CollectiveError& e) {
      EXPECT_EQ(e.kind, Kind::Aborted);
      EXPECT_EQ(e.rank, r);
    }
  }
  try {
    rethrow_root_failure(outcomes);
    FAIL() << "nothing rethrown";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "boom");
  }
}

// A rank counts the collectives it entered after the world was aborted for good: one that
// finished before the failure and completed entered none; one that came later entered one, which
// failed (faults_detected tells the two apart with it).
TEST(ThreadWorld, CountsTheCollectivesEachRankEnteredAfterTheAbort) {
  ThreadWorld world({3, 5000ms, Schedule{}});
  const auto outcomes = world.run([](std::shared_ptr<Communicator> c) {
    const int me = c->global_rank();
    auto pair = c->split(me <= 1 ? 0 : -1, me, "pair");
    if (me == 0) {
      c->pause(10ms);
      throw std::runtime_error("boom");
    }
    if (me == 1) {
      c->pause(20ms);
      at::Tensor t = at::ones({2});
      pair->all_reduce(t, ReduceOp::Sum);
    }
  });
  EXPECT_FALSE(outcomes[0].ok);
  EXPECT_EQ(outcomes[0].collectives_after_abort, 0);
  EXPECT_FALSE(outcomes[1].ok);
  EXPECT_EQ(outcomes[1].collectives_after_abort, 1);
  EXPECT_TRUE(outcomes[2].ok) << outcomes[2].error;
  EXPECT_EQ(outcomes[2].collectives_after_abort, 0);
}

}  // namespace
}  // namespace shardfuzz::comm
