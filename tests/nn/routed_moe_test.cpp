// Routed MoE with expert parallelism on ThreadWorld rank threads: the differentiable all-to-all
// (exact rows and grads, uneven and empty splits), EP vs the unsharded layer on each rank's tokens
// (outputs, input grads, expert grads as the sum over ranks), ranks that receive no token, the
// skip_empty_experts defect model, and the router's gradient against plain LibTorch autograd.
#include "runtime/comm/thread_world.h"
#include "runtime/nn/init.h"
#include "runtime/nn/ops.h"
#include "runtime/nn/routed_moe.h"
#include "runtime/nn/routing_ops.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <numeric>

namespace shardfuzz::nn {
namespace {

using namespace std::chrono_literals;
using Fn = std::function<void(std::shared_ptr<comm::Communicator>)>;

void run_ranks(int n, const Fn& fn) {
  auto outcomes = comm::ThreadWorld(comm::ThreadWorldOptions{n, 10s}).run(fn);
  for (const auto& o : outcomes) EXPECT_TRUE(o.ok) << "world " << n << " rank " << o.rank << ": " << o.error;
}

// Differentiable scalar loss sum(y * r), so dL/dy = r exactly.
at::Tensor weighted_sum(const at::Tensor& y, const at::Tensor& r) { return ops::sum_all(ops::mul(y, r)); }

bool close(const at::Tensor& a, const at::Tensor& b, double tol = 1e-5) {
  return a.defined() && b.defined() && a.sizes() == b.sizes() && at::allclose(a, b, tol, tol);
}

// ---- (a) the all-to-all ------------------------------------------------------------------------

// Row k sent from rank i to rank j carries f(i, j, k) in each of its 3 columns (offset by column),
// and its gradient g(i, j, k): both exact in float, so misplaced rows show as exact mismatches.
float fwd_value(int i, int j, int64_t k, int c) { return static_cast<float>(i * 1000 + j * 100 + k * 10 + c); }
float grad_value(int i, int j, int64_t k, int c) { return -fwd_value(i, j, k, c) - 0.5f; }

at::Tensor rows_of(const std::vector<std::vector<float>>& rows) {
  if (rows.empty()) return at::empty({0, 3});
  std::vector<float> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return at::tensor(flat).reshape({static_cast<int64_t>(rows.size()), 3});
}

void check_all_to_all(int n, const std::function<int64_t(int, int)>& count, const std::string& pattern) {
  run_ranks(n, [&](std::shared_ptr<comm::Communicator> world) {
    const int me = world->rank();
    std::vector<int64_t> send(n), recv(n);
    std::vector<std::vector<float>> x_rows, y_rows, gy_rows, gx_rows;
    for (int j = 0; j < n; ++j) {
      send[j] = count(me, j);
      recv[j] = count(j, me);
      for (int64_t k = 0; k < send[j]; ++k) {
        x_rows.push_back({fwd_value(me, j, k, 0), fwd_value(me, j, k, 1), fwd_value(me, j, k, 2)});
        gx_rows.push_back({grad_value(me, j, k, 0), grad_value(me, j, k, 1), grad_value(me, j, k, 2)});
      }
      for (int64_t k = 0; k < recv[j]; ++k) {
        y_rows.push_back({fwd_value(j, me, k, 0), fwd_value(j, me, k, 1), fwd_value(j, me, k, 2)});
        gy_rows.push_back({grad_value(j, me, k, 0), grad_value(j, me, k, 1), grad_value(j, me, k, 2)});
      }
    }
    at::Tensor x = rows_of(x_rows);
    x.set_requires_grad(true);
    const uint64_t before = world->sequence();
    at::Tensor y = routing::all_to_all(x, world, recv, send);
    EXPECT_EQ(world->sequence(), before + 1);
    EXPECT_TRUE(y.requires_grad()) << pattern << " n=" << n << " rank " << me << ": node not recorded";
    EXPECT_TRUE(y.equal(rows_of(y_rows))) << pattern << " n=" << n << " rank " << me;
    weighted_sum(y, rows_of(gy_rows)).backward();
    // Every rank, also one with nothing to send or receive, enters the backward all-to-all.
    EXPECT_EQ(world->sequence(), before + 2) << pattern << " n=" << n << " rank " << me;
    ASSERT_TRUE(x.grad().defined()) << pattern << " n=" << n << " rank " << me;
    EXPECT_TRUE(x.grad().equal(rows_of(gx_rows))) << pattern << " n=" << n << " rank " << me;
  });
}

TEST(NnRoutedMoeAllToAll, UnevenSplitsRowsAndGradsExact) {
  for (int n : {2, 3, 4}) {
    check_all_to_all(n, [](int i, int j) -> int64_t { return (i + 2 * j) % 3; }, "(i+2j)%3");
    // Rank 0 neither sends nor receives a row; the others exchange 1..3 rows, self included.
    check_all_to_all(n, [](int i, int j) -> int64_t { return i == 0 || j == 0 ? 0 : 1 + (i * j) % 3; }, "rank0-empty");
  }
}

TEST(NnRoutedMoeAllToAll, RejectsSplitsThatDoNotFit) {
  run_ranks(2, [&](std::shared_ptr<comm::Communicator> world) {
    at::Tensor x = at::zeros({3, 2});
    try {
      routing::all_to_all(x, world, {1, 1}, {1, 1});
      ADD_FAILURE() << "input_splits summing to 2 accepted for 3 rows";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(world->rank())), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("[1, 1]"), std::string::npos) << e.what();
    }
  });
}

// ---- (b) EP vs the unsharded layer -----------------------------------------------------------------

struct EpCase {
  int world;
  int64_t experts, top_k;
  std::function<int64_t(int)> tokens;  // tokens on a rank
  bool same_tokens;                    // every rank gets the same x (all route alike)
  bool expect_idle_rank;               // some rank's local experts must receive no token
  std::string name;
};

constexpr int64_t kDim = 6, kHidden = 5;
constexpr uint64_t kSeed = 11;

struct RankResult {
  at::Tensor ref_w1_grad, ref_w2_grad, ep_w1_grad, ep_w2_grad, ref_w1, ep_w1;
  int64_t local_tokens = -1;
  int experts_calls = 0;
};

// Counts operator() calls of the module it is installed on.
struct CountingHooks final : ForwardHooks {
  int calls = 0;
  at::Tensor pre_forward(Module&, const at::Tensor& input) override {
    ++calls;
    return input;
  }
  at::Tensor post_forward(Module&, const at::Tensor& output) override { return output; }
};

void check_ep_case(const EpCase& c) {
  std::vector<RankResult> results(static_cast<std::size_t>(c.world));
  run_ranks(c.world, [&](std::shared_ptr<comm::Communicator> world) {
    const int me = world->rank();
    const std::string where = c.name + " rank " + std::to_string(me);
    Init init_ep(kSeed), init_ref(kSeed);
    RoutedMoE ep(kDim, c.experts, kHidden, c.top_k, init_ep, world);
    RoutedMoE ref(kDim, c.experts, kHidden, c.top_k, init_ref);
    auto hooks = std::make_shared<CountingHooks>();
    ep.experts().set_hooks(hooks);
    ASSERT_EQ(ep.experts().num_local_experts(), c.experts / c.world);
    ASSERT_EQ(ep.experts().first_local_expert(), me * (c.experts / c.world));
    ASSERT_EQ(ref.experts().num_local_experts(), c.experts);

    const int64_t T = c.tokens(me);
    at::Tensor x = Init(c.same_tokens ? 100 : 100 + me).normal({T, kDim}, 1.0);
    at::Tensor r = Init(200 + me).normal({T, kDim}, 1.0);
    at::Tensor xe = x.clone(), xr = x.clone();
    xe.set_requires_grad(true);
    xr.set_requires_grad(true);
    at::Tensor ye = ep(xe), yr = ref(xr);
    EXPECT_TRUE(close(ye, yr)) << where << ": outputs differ";
    weighted_sum(ye, r).backward();
    weighted_sum(yr, r).backward();
    EXPECT_TRUE(close(xe.grad(), xr.grad())) << where << ": input grads differ";
    EXPECT_TRUE(close(ep.router().param("weight").grad(), ref.router().param("weight").grad()))
        << where << ": router grads differ";

    RankResult& out = results[static_cast<std::size_t>(me)];
    out.ref_w1_grad = ref.experts().param("w1").grad();
    out.ref_w2_grad = ref.experts().param("w2").grad();
    out.ep_w1_grad = ep.experts().param("w1").grad();
    out.ep_w2_grad = ep.experts().param("w2").grad();
    out.ref_w1 = ref.experts().param("w1").detach();
    out.ep_w1 = ep.experts().param("w1").detach();
    const auto& counts = ep.experts().tokens_per_expert();
    out.local_tokens = std::accumulate(counts.begin(), counts.end(), int64_t{0});
    out.experts_calls = hooks->calls;
  });

  const int64_t local = c.experts / c.world;
  at::Tensor sum_w1, sum_w2;
  for (const auto& r : results) {
    ASSERT_TRUE(r.ref_w1_grad.defined() && r.ref_w2_grad.defined()) << c.name << ": reference expert grads missing";
    sum_w1 = sum_w1.defined() ? sum_w1 + r.ref_w1_grad : r.ref_w1_grad.clone();
    sum_w2 = sum_w2.defined() ? sum_w2 + r.ref_w2_grad : r.ref_w2_grad.clone();
  }
  bool idle = false;
  for (int j = 0; j < c.world; ++j) {
    const RankResult& r = results[static_cast<std::size_t>(j)];
    const std::string where = c.name + " rank " + std::to_string(j);
    EXPECT_EQ(r.experts_calls, 1) << where << ": experts module called " << r.experts_calls << " times";
    idle = idle || r.local_tokens == 0;
    EXPECT_TRUE(r.ep_w1.equal(r.ref_w1.narrow(0, j * local, local))) << where << ": EP slice is not the reference's";
    // With grouped-mm semantics the grads exist even when no token arrived (then they are zeros).
    EXPECT_TRUE(close(r.ep_w1_grad, sum_w1.narrow(0, j * local, local))) << where << ": w1 grad";
    EXPECT_TRUE(close(r.ep_w2_grad, sum_w2.narrow(0, j * local, local))) << where << ": w2 grad";
  }
  if (c.expect_idle_rank) EXPECT_TRUE(idle) << c.name << ": no rank was left without tokens";
}

TEST(NnRoutedMoeEp, MatchesUnshardedLayerWorld2) {
  for (int64_t k : {1, 2})
    check_ep_case({2, 4, k, [](int) -> int64_t { return 5; }, false, false, "w2 E4 k" + std::to_string(k)});
}

TEST(NnRoutedMoeEp, MatchesUnshardedLayerWorld4) {
  for (int64_t k : {1, 2})
    check_ep_case({4, 8, k, [](int r) -> int64_t { return 3 + 2 * r; }, false, false, "w4 E8 k" + std::to_string(k)});
}

TEST(NnRoutedMoeEp, RanksThatReceiveNoTokenStillTakePart) {
  // One identical token per rank, top-1: all four copies go to one expert on one rank.
  check_ep_case({4, 4, 1, [](int) -> int64_t { return 1; }, true, true, "w4 E4 k1 one token"});
  // One random token per rank.
  check_ep_case({4, 4, 1, [](int) -> int64_t { return 1; }, false, false, "w4 E4 k1 random token"});
  // Rank 0 has no tokens at all (sends nothing), top-k = E.
  check_ep_case({4, 8, 8, [](int r) -> int64_t { return r; }, false, false, "w4 E8 k8 rank0 empty"});
  check_ep_case({3, 6, 2, [](int r) -> int64_t { return r == 1 ? 0 : 4; }, false, false, "w3 E6 k2 rank1 empty"});
}

// ---- (c) skip_empty_experts --------------------------------------------------------------------

TEST(NnRoutedMoeSkipEmptyExperts, IdleRankGetsNoExpertGrad) {
  for (bool skip : {false, true}) {
    std::vector<int64_t> local_tokens(4, -1);
    std::vector<int> defined(4, -1), all_zero(4, -1);
    std::vector<at::Tensor> outputs(4), x_grads(4);
    run_ranks(4, [&](std::shared_ptr<comm::Communicator> world) {
      const int me = world->rank();
      Init init(kSeed);
      RoutedMoE moe(kDim, 4, kHidden, 1, init, world);
      moe.experts().set_skip_empty_experts(skip);
      at::Tensor x = Init(100).normal({1, kDim}, 1.0);
      x.set_requires_grad(true);
      at::Tensor y = moe(x);
      weighted_sum(y, Init(200 + me).normal({1, kDim}, 1.0)).backward();
      const auto& counts = moe.experts().tokens_per_expert();
      local_tokens[me] = std::accumulate(counts.begin(), counts.end(), int64_t{0});
      const at::Tensor& g = moe.experts().param("w1").grad();
      defined[me] = g.defined();
      all_zero[me] = g.defined() && g.eq(0).all().item<bool>();
      outputs[me] = y.detach();
      x_grads[me] = x.grad();
    });
    int idle = 0;
    for (int r = 0; r < 4; ++r) {
      const std::string where = std::string(skip ? "skip" : "default") + " rank " + std::to_string(r);
      ASSERT_GE(local_tokens[r], 0) << where;
      ASSERT_TRUE(x_grads[r].defined()) << where;
      if (local_tokens[r] == 0) {
        ++idle;
        EXPECT_EQ(defined[r], skip ? 0 : 1) << where << ": w1.grad defined=" << defined[r];
        if (!skip) EXPECT_EQ(all_zero[r], 1) << where << ": an idle rank's w1 grad must be zeros";
      } else {
        EXPECT_EQ(defined[r], 1) << where;
        EXPECT_EQ(all_zero[r], 0) << where;
      }
    }
    EXPECT_EQ(idle, 3) << "the one expert chosen by all ranks lives on one rank";
  }
}

TEST(NnRoutedMoeSkipEmptyExperts, NoTokensWithoutEp) {
  for (bool skip : {false, true}) {
    Init init(kSeed);
    RoutedMoE moe(kDim, 4, kHidden, 2, init);
    moe.experts().set_skip_empty_experts(skip);
    at::Tensor x = at::zeros({0, kDim});
    x.set_requires_grad(true);
    at::Tensor y = moe(x);
    ASSERT_EQ(y.sizes(), (std::vector<int64_t>{0, kDim}));
    weighted_sum(y, at::zeros({0, kDim})).backward();
    EXPECT_EQ(moe.experts().param("w1").grad().defined(), !skip);
    EXPECT_EQ(moe.experts().param("w2").grad().defined(), !skip);
  }
}

// ---- (d) router gradient against LibTorch's own autograd -----------------------------------------------------

TEST(NnRoutedMoeRouterGrad, MatchesLibTorchAutograd) {
  const int64_t T = 7, E = 4;
  for (int64_t k : {1, 2, 4}) {
    const std::string where = "k=" + std::to_string(k);
    Init init(kSeed);
    RoutedMoE moe(kDim, E, kHidden, k, init);
    at::Tensor x = Init(5).normal({T, kDim}, 1.0), r = Init(6).normal({T, kDim}, 1.0);

    // The runtime's graph.
    at::Tensor xm = x.clone();
    xm.set_requires_grad(true);
    at::Tensor ym = moe(xm);
    weighted_sum(ym, r).backward();

    // The same math on LibTorch's autograd: softmax scores, no renormalisation over the top k.
    at::Tensor wr = moe.router().param("weight").detach().clone().requires_grad_(true);
    at::Tensor w1 = moe.experts().param("w1").detach().clone().requires_grad_(true);
    at::Tensor w2 = moe.experts().param("w2").detach().clone().requires_grad_(true);
    at::Tensor xt = x.clone().requires_grad_(true);
    at::Tensor probs = at::softmax(at::matmul(xt, wr.t()), 1);
    at::Tensor idx = std::get<1>(at::topk(probs.detach(), k, 1));
    at::Tensor w = probs.gather(1, idx);
    std::vector<at::Tensor> rows;
    for (int64_t t = 0; t < T; ++t) {
      at::Tensor acc = at::zeros({1, kDim});
      for (int64_t j = 0; j < k; ++j) {
        const int64_t e = idx[t][j].item<int64_t>();
        at::Tensor h = at::relu(at::matmul(xt.narrow(0, t, 1), w1[e]));
        acc = acc + w[t][j] * at::matmul(h, w2[e]);
      }
      rows.push_back(acc);
    }
    at::Tensor yt = at::cat(rows, 0);
    (yt * r).sum().backward();

    EXPECT_TRUE(close(ym, yt.detach())) << where << ": outputs";
    EXPECT_TRUE(close(moe.router().param("weight").grad(), wr.grad())) << where << ": router weight grad";
    EXPECT_GT(wr.grad().abs().sum().item<double>(), 0.0) << where << ": no gradient reached the router";
    EXPECT_TRUE(close(moe.experts().param("w1").grad(), w1.grad())) << where << ": w1 grad";
    EXPECT_TRUE(close(moe.experts().param("w2").grad(), w2.grad())) << where << ": w2 grad";
    EXPECT_TRUE(close(xm.grad(), xt.grad())) << where << ": input grad";
  }
}

// ---- activation checkpointing ---------------------------------------------------------------------

// The layer (or its experts alone) checkpointed in every mode gives the grads of the plain layer:
// the recompute re-runs the counts/dispatch/combine all-to-alls on every rank in the same order.
TEST(NnRoutedMoeCheckpoint, EveryModeMatchesPlainLayerUnderEp) {
  using ac::CheckpointMode;
  for (CheckpointMode mode : {CheckpointMode::NonReentrant, CheckpointMode::Reentrant, CheckpointMode::SelectiveOps})
    for (bool experts_only : {false, true}) {
      const std::string name = std::string(ac::to_string(mode)) + (experts_only ? " experts" : " moe");
      run_ranks(2, [&](std::shared_ptr<comm::Communicator> world) {
        const int me = world->rank();
        Init init_a(kSeed), init_b(kSeed);
        RoutedMoE plain(kDim, 4, kHidden, 2, init_a, world), ckpt(kDim, 4, kHidden, 2, init_b, world);
        if (experts_only)
          ckpt.experts().set_checkpoint_mode(mode);
        else
          ckpt.set_checkpoint_mode(mode);
        at::Tensor x = Init(100 + me).normal({me == 0 ? 1 : 5, kDim}, 1.0), r = Init(200 + me).normal(x.sizes().vec(), 1.0);
        at::Tensor xa = x.clone(), xb = x.clone();
        xa.set_requires_grad(true);
        xb.set_requires_grad(true);
        at::Tensor ya = plain(xa);
        at::Tensor yb = ckpt(xb);
        weighted_sum(ya, r).backward();
        weighted_sum(yb, r).backward();
        const std::string where = name + " rank " + std::to_string(me);
        EXPECT_TRUE(close(ya, yb, 1e-6)) << where << ": outputs";
        EXPECT_TRUE(close(xa.grad(), xb.grad(), 1e-6)) << where << ": input grads";
        EXPECT_TRUE(close(plain.router().param("weight").grad(), ckpt.router().param("weight").grad(), 1e-6))
            << where << ": router grads";
        EXPECT_TRUE(close(plain.experts().param("w1").grad(), ckpt.experts().param("w1").grad(), 1e-6)) << where << ": w1";
        EXPECT_TRUE(close(plain.experts().param("w2").grad(), ckpt.experts().param("w2").grad(), 1e-6)) << where << ": w2";
      });
    }
}

// ---- construction --------------------------------------------------------------------------------

TEST(NnRoutedMoeConstruction, RejectsBadTopKAndUnevenExperts) {
  Init init(1);
  for (int64_t k : {0, 5}) {
    try {
      RoutedMoE moe(kDim, 4, kHidden, k, init);
      ADD_FAILURE() << "top_k " << k << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("top_k " + std::to_string(k)), std::string::npos) << e.what();
    }
  }
  run_ranks(3, [&](std::shared_ptr<comm::Communicator> world) {
    Init local_init(1);
    try {
      RoutedMoE moe(kDim, 4, kHidden, 1, local_init, world);
      ADD_FAILURE() << "4 experts over EP 3 accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("size 3"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace shardfuzz::nn
