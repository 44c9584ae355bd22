// selective_ops checkpointing (save matmul outputs, recompute the rest) on a 2-layer MLP built
// from ops: the same loss and gradients as no checkpoint and as non_reentrant; every save still
// dropped and recomputed at the first unpack (as upstream SAC), but the matmul outputs kept from
// forward and reused by the recompute instead of being computed again; nested modules' forward
// hooks re-fire in the recompute; a recompute that runs other matmuls than the forward is caught.
#include "runtime/ac/checkpoint.h"

#include "runtime/nn/linear.h"
#include "runtime/nn/module.h"
#include "runtime/nn/ops.h"
#include "tests/nn/reference.h"

#include <memory>

namespace shardfuzz::ac {
namespace {

using nn::testing::expect_close;
using nn::testing::grads;
using nn::testing::leaf;
using nn::testing::random;
namespace ops = nn::ops;

struct Mlp {
  std::vector<at::Tensor> params;  // per layer: w1 [8, 4], b1 [8], w2 [4, 8], b2 [4]
  std::vector<void*> linear_outputs;  // data_ptr of every ops::linear output, forward and recompute

  explicit Mlp(uint64_t seed) {
    for (int layer = 0; layer < 2; ++layer) {
      params.push_back(leaf(random({8, 4}, seed + 10 * layer + 1)));
      params.push_back(leaf(random({8}, seed + 10 * layer + 2)));
      params.push_back(leaf(random({4, 8}, seed + 10 * layer + 3)));
      params.push_back(leaf(random({4}, seed + 10 * layer + 4)));
    }
  }

  // relu, a gate (mul saves both operands) and a softmax: non-matmul saves between the matmuls.
  at::Tensor layer(int i, const at::Tensor& x) {
    auto p = [&](int k) { return params[static_cast<std::size_t>(4 * i + k)]; };
    at::Tensor h = ops::linear(x, p(0), p(1));
    linear_outputs.push_back(h.data_ptr());
    at::Tensor y = ops::linear(ops::relu(h), p(2), p(3));
    linear_outputs.push_back(y.data_ptr());
    return ops::add(x, ops::mul(y, ops::softmax(y, -1)));
  }

  struct Result {
    at::Tensor loss;
    std::vector<at::Tensor> grads;  // x, then the params
  };
  Result run(CheckpointMode mode, const at::Tensor& x0) {
    at::Tensor x = leaf(x0);
    at::Tensor h = x;
    for (int i = 0; i < 2; ++i)
      h = checkpoint(mode, [this, i](const at::Tensor& in) { return layer(i, in); }, h, "layers." + std::to_string(i));
    at::Tensor loss = ops::sum_all(ops::mul(h, h));
    std::vector<at::Tensor> wrt{x};
    wrt.insert(wrt.end(), params.begin(), params.end());
    return {loss.detach(), grads(loss, wrt)};
  }
};

TEST(AcSelectiveOpsTest, SameLossAndGradientsAsNoCheckpointAndNonReentrant) {
  at::Tensor x0 = random({5, 4}, 1);
  Mlp plain(100), full(100), selective(100);
  auto want = plain.run(CheckpointMode::None, x0);
  auto got_full = full.run(CheckpointMode::NonReentrant, x0);
  auto got_sel = selective.run(CheckpointMode::SelectiveOps, x0);
  expect_close(got_full.loss, want.loss, 1e-9, "non_reentrant loss");
  expect_close(got_sel.loss, want.loss, 1e-9, "selective_ops loss");
  for (std::size_t i = 0; i < want.grads.size(); ++i) {
    expect_close(got_full.grads[i], want.grads[i], 1e-9, "non_reentrant grad " + std::to_string(i));
    expect_close(got_sel.grads[i], want.grads[i], 1e-9, "selective_ops grad " + std::to_string(i));
  }
}

TEST(AcSelectiveOpsTest, KeepsMatmulOutputsAndTheRecomputeReusesThemInsteadOfRecomputing) {
  at::Tensor x0 = random({5, 4}, 2);
  Mlp full(200), selective(200);
  checkpoint_counters() = {};
  full.run(CheckpointMode::NonReentrant, x0);
  const CheckpointCounters nr = checkpoint_counters();
  checkpoint_counters() = {};
  selective.run(CheckpointMode::SelectiveOps, x0);
  const CheckpointCounters sel = checkpoint_counters();

  EXPECT_EQ(nr.recomputes, 2u);
  EXPECT_EQ(nr.outputs_kept, 0u);
  EXPECT_EQ(nr.outputs_reused, 0u);
  // Every save is still a slot (upstream packs them all), so both modes recompute at the same point.
  EXPECT_EQ(sel.saves_dropped, nr.saves_dropped);
  EXPECT_EQ(sel.recomputes, 2u);
  EXPECT_EQ(sel.outputs_kept, 4u) << "two linears per layer";
  EXPECT_EQ(sel.bytes_kept, 2u * (5 * 8 + 5 * 4) * sizeof(double));
  EXPECT_EQ(sel.outputs_reused, 4u);

  // The recompute's matmul outputs are the forward's own buffers: nothing to recompute for them.
  ASSERT_EQ(selective.linear_outputs.size(), 8u);  // 4 in forward, 4 in the recomputes (reverse layer order)
  EXPECT_EQ(selective.linear_outputs[4], selective.linear_outputs[2]);
  EXPECT_EQ(selective.linear_outputs[5], selective.linear_outputs[3]);
  EXPECT_EQ(selective.linear_outputs[6], selective.linear_outputs[0]);
  EXPECT_EQ(selective.linear_outputs[7], selective.linear_outputs[1]);
}

TEST(AcSelectiveOpsTest, ARegionOfOnlyMatmulsStillRecomputesAtItsFirstUnpack) {
  at::Tensor w1 = leaf(random({3, 3}, 3)), w2 = leaf(random({3, 3}, 4));
  at::Tensor x = leaf(random({2, 3}, 5));
  checkpoint_counters() = {};
  at::Tensor y = checkpoint(CheckpointMode::SelectiveOps,
                            [&](const at::Tensor& in) { return ops::linear(ops::linear(in, w1, {}), w2, {}); }, x, "mm");
  auto g = grads(ops::sum_all(y), {x, w1, w2});
  EXPECT_EQ(checkpoint_counters().recomputes, 1u);
  EXPECT_EQ(checkpoint_counters().outputs_reused, 2u);
  at::Tensor xr = leaf(x), w1r = leaf(w1), w2r = leaf(w2);
  auto gr = grads(xr.matmul(w1r.t()).matmul(w2r.t()).sum(), {xr, w1r, w2r});
  for (std::size_t i = 0; i < 3; ++i) expect_close(g[i], gr[i], 1e-9, "grad " + std::to_string(i));
}

struct CountingHooks final : nn::ForwardHooks {
  int pre = 0, post = 0;
  at::Tensor pre_forward(nn::Module&, const at::Tensor& input) override {
    ++pre;
    return input;
  }
  at::Tensor post_forward(nn::Module&, const at::Tensor& output) override {
    ++post;
    return output;
  }
};

struct TwoLinear final : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  explicit TwoLinear(nn::Init& init) : Module("TwoLinear") {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 6, init));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(6, 4, init));
  }
  at::Tensor forward(const at::Tensor& x) override { return (*fc2)(ops::relu((*fc1)(x))); }
};

TEST(AcSelectiveOpsTest, NestedModulesForwardHooksReFireInTheRecompute) {
  for (CheckpointMode mode : {CheckpointMode::NonReentrant, CheckpointMode::SelectiveOps}) {
    nn::Init init(8);
    TwoLinear block(init);
    block.set_checkpoint_mode(mode);
    auto hooks = std::make_shared<CountingHooks>();
    block.fc1->set_hooks(hooks);
    at::Tensor x = leaf(random({3, 4}, 9, at::kFloat));
    at::Tensor y = block(x);
    EXPECT_EQ(hooks->pre, 1) << to_string(mode);
    ops::sum_all(y).backward();
    EXPECT_EQ(hooks->pre, 2) << to_string(mode) << ": the recompute runs fc1's forward hooks again";
    EXPECT_EQ(hooks->post, 2) << to_string(mode);
    EXPECT_TRUE(block.fc1->param("weight").grad().defined());
  }
}

TEST(AcSelectiveOpsTest, ARecomputeThatRunsOtherMatmulsThanTheForwardIsCaught) {
  // Same number of saves in both runs (matmul and mul each save both operands), different matmuls.
  at::Tensor w = leaf(random({3, 3}, 10));
  at::Tensor x = leaf(random({3, 3}, 11));
  int calls = 0;
  at::Tensor y = checkpoint(CheckpointMode::SelectiveOps,
                            [&](const at::Tensor& in) { return calls++ == 0 ? ops::matmul(in, w) : ops::mul(in, w); },
                            x, "layers.3");
  try {
    ops::sum_all(y).backward();
    FAIL() << "expected a throw";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint region 'layers.3' (selective_ops)"), std::string::npos) << e.what();
  }
}

// The observer sees each region's forward and recompute (what checkpoint_policy_honoured judges):
// layers in forward order, recomputes in reverse; the observer current at forward gets the recompute.
TEST(AcSelectiveOpsTest, EachRegionReportsItsForwardAndItsRecomputeToTheObserver) {
  at::Tensor x0 = random({5, 4}, 2);
  for (CheckpointMode mode : {CheckpointMode::NonReentrant, CheckpointMode::Reentrant, CheckpointMode::SelectiveOps}) {
    std::vector<RegionReport> seen;
    Mlp mlp(300);
    {
      RegionObserverGuard observe([&](const RegionReport& r) { seen.push_back(r); });
      mlp.run(mode, x0);
    }
    const char* name = to_string(mode);
    ASSERT_EQ(seen.size(), 4u) << name;
    const bool selective = mode == CheckpointMode::SelectiveOps;
    for (int i = 0; i < 4; ++i) {
      const RegionReport& r = seen[static_cast<std::size_t>(i)];
      EXPECT_EQ(r.mode, mode) << name;
      EXPECT_EQ(r.where, i < 2 ? "layers." + std::to_string(i) : "layers." + std::to_string(3 - i)) << name << " " << i;
      EXPECT_EQ(r.pass, i < 2 ? RegionReport::Pass::Forward : RegionReport::Pass::Recompute) << name << " " << i;
    }
    // Forward: two linears per layer; selective keeps both outputs; only the reentrant forward saves nothing.
    EXPECT_EQ(seen[0].matmul_like_ran, 2u) << name;
    EXPECT_EQ(seen[0].outputs_kept, selective ? 2u : 0u) << name;
    EXPECT_EQ(seen[0].bytes_kept, selective ? int64_t{(5 * 8 + 5 * 4) * sizeof(double)} : 0) << name;
    EXPECT_EQ(seen[0].saves > 0, mode != CheckpointMode::Reentrant) << name;
    // Recompute: selective reuses both outputs and runs no matmul; the others run both again.
    EXPECT_EQ(seen[3].matmul_like_ran, selective ? 0u : 2u) << name;
    EXPECT_EQ(seen[3].outputs_reused, selective ? 2u : 0u) << name;
    if (mode != CheckpointMode::Reentrant) EXPECT_EQ(seen[3].saves, seen[0].saves) << name;
  }
}

TEST(AcSelectiveOpsTest, ModeNamesRoundTrip) {
  EXPECT_STREQ(to_string(CheckpointMode::SelectiveOps), "selective_ops");
  EXPECT_EQ(checkpoint_mode_from_string("selective_ops"), CheckpointMode::SelectiveOps);
  try {
    checkpoint_mode_from_string("selective");
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'selective'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("selective_ops"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardfuzz::ac
