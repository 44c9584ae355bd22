// The runtime's new ops (softmax, rms_norm, embedding, reshape, transpose, narrow) against the same
// computation in plain LibTorch autograd: forward values, gradients of a random-probe loss
// (double, tolerance 1e-9..1e-6), and how many tensors each op saves (upstream's choice).
#include "runtime/nn/ops.h"

#include "tests/nn/reference.h"

#include <memory>

namespace shardfuzz::nn {
namespace {

using testing::CountingHooks;
using testing::expect_close;
using testing::grads;
using testing::leaf;
using testing::random;

constexpr double kTol = 1e-9;

// loss = sum(y * probe): every output element gets a different gradient.
at::Tensor probe_loss(const at::Tensor& y, uint64_t seed) {
  return ops::sum_all(ops::mul(y, random(y.sizes().vec(), seed, y.scalar_type())));
}
at::Tensor probe_loss_ref(const at::Tensor& y, uint64_t seed) {
  return (y * random(y.sizes().vec(), seed, y.scalar_type())).sum();
}

std::size_t saves_of(const std::function<void()>& f) {
  auto hooks = std::make_shared<CountingHooks>();
  autograd::SavedTensorHooksGuard guard(hooks);
  f();
  return hooks->saves;
}

TEST(NnOpsTest, SoftmaxMatchesLibTorchOnEachDim) {
  for (int64_t dim : {-1, 0, 1}) {
    at::Tensor x0 = random({3, 5}, 1);
    at::Tensor x = leaf(x0), xr = leaf(x0);
    at::Tensor y = ops::softmax(x, dim);
    at::Tensor yr = at::softmax(xr, dim);
    expect_close(y, yr, kTol, "softmax forward dim " + std::to_string(dim));
    expect_close(grads(probe_loss(y, 2), {x})[0], grads(probe_loss_ref(yr, 2), {xr})[0], kTol,
                 "softmax grad dim " + std::to_string(dim));
  }
}

TEST(NnOpsTest, RmsNormMatchesLibTorchFor2dAnd3dInputs) {
  const double eps = 1e-6;
  for (auto sizes : {std::vector<int64_t>{4, 6}, std::vector<int64_t>{2, 3, 6}}) {
    at::Tensor x0 = random(sizes, 3), w0 = random({6}, 4) + 1.0;
    at::Tensor x = leaf(x0), w = leaf(w0), xr = leaf(x0), wr = leaf(w0);
    at::Tensor y = ops::rms_norm(x, w, eps);
    at::Tensor yr = xr * at::rsqrt(xr.pow(2).mean(-1, true) + eps) * wr;
    expect_close(y, yr, kTol, "rms_norm forward");
    auto g = grads(probe_loss(y, 5), {x, w});
    auto gr = grads(probe_loss_ref(yr, 5), {xr, wr});
    expect_close(g[0], gr[0], kTol, "rms_norm grad x");
    expect_close(g[1], gr[1], kTol, "rms_norm grad weight");
  }
}

TEST(NnOpsTest, RmsNormGradsWhenOnlyOneInputRequiresGrad) {
  at::Tensor x0 = random({3, 4}, 6), w0 = random({4}, 7);
  {
    at::Tensor x = leaf(x0), xr = leaf(x0);
    at::Tensor y = ops::rms_norm(x, w0, 1e-5);
    at::Tensor yr = xr * at::rsqrt(xr.pow(2).mean(-1, true) + 1e-5) * w0;
    expect_close(grads(probe_loss(y, 8), {x})[0], grads(probe_loss_ref(yr, 8), {xr})[0], kTol, "x only");
  }
  {
    at::Tensor w = leaf(w0), wr = leaf(w0);
    at::Tensor y = ops::rms_norm(x0, w, 1e-5);
    at::Tensor yr = x0 * at::rsqrt(x0.pow(2).mean(-1, true) + 1e-5) * wr;
    expect_close(grads(probe_loss(y, 9), {w})[0], grads(probe_loss_ref(yr, 9), {wr})[0], kTol, "weight only");
  }
}

TEST(NnOpsTest, RmsNormRejectsAWeightThatDoesNotMatchTheLastDim) {
  try {
    ops::rms_norm(random({2, 4}, 1), random({5}, 2), 1e-6);
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[5]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2, 4]"), std::string::npos) << e.what();
  }
}

TEST(NnOpsTest, EmbeddingWithRepeatedIdsAccumulatesTheirGradients) {
  at::Tensor w0 = random({7, 4}, 10);
  at::Tensor ids = at::tensor(std::vector<int64_t>{1, 3, 1, 6, 1, 0});
  at::Tensor w = leaf(w0), wr = leaf(w0);
  at::Tensor y = ops::embedding(w, ids);
  at::Tensor yr = at::embedding(wr, ids);
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{6, 4}));
  expect_close(y, yr, 0.0, "embedding forward");
  at::Tensor g = grads(probe_loss(y, 11), {w})[0];
  expect_close(g, grads(probe_loss_ref(yr, 11), {wr})[0], kTol, "embedding grad");
  EXPECT_EQ(g[2].abs().sum().item<double>(), 0.0) << "an id never looked up gets no gradient";
}

TEST(NnOpsTest, EmbeddingTakesIdsOfAnyShape) {
  at::Tensor w0 = random({5, 3}, 12);
  at::Tensor ids = at::tensor(std::vector<int64_t>{4, 0, 4, 2, 2, 1}).reshape({2, 3});
  at::Tensor w = leaf(w0), wr = leaf(w0);
  at::Tensor y = ops::embedding(w, ids);
  at::Tensor yr = at::embedding(wr, ids);
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{2, 3, 3}));
  expect_close(grads(probe_loss(y, 13), {w})[0], grads(probe_loss_ref(yr, 13), {wr})[0], kTol, "embedding 2-d ids");
}

TEST(NnOpsTest, EmbeddingRejectsOutOfRangeAndNonInt64Ids) {
  at::Tensor w = random({5, 3}, 14);
  try {
    ops::embedding(w, at::tensor(std::vector<int64_t>{0, 5}));
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("id 5 out of range for vocab 5"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::embedding(w, at::tensor(std::vector<int>{0, 1})), std::invalid_argument);
}

TEST(NnOpsTest, ReshapeAndTransposeMatchLibTorchAndAliasTheirInput) {
  at::Tensor x0 = random({2, 3, 4}, 15);
  at::Tensor x = leaf(x0), xr = leaf(x0);
  at::Tensor r = ops::reshape(x, {6, -1});
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(r.data_ptr(), x.data_ptr()) << "a reshape of a contiguous tensor costs no memory";
  at::Tensor t = ops::transpose(x, 0, 2);
  EXPECT_EQ(t.data_ptr(), x.data_ptr());
  // Non-contiguous into reshape: LibTorch copies, the op still records.
  at::Tensor y = ops::reshape(ops::transpose(ops::mul(x, x), 1, 2), {2, 12});
  at::Tensor yr = (xr * xr).transpose(1, 2).reshape({2, 12});
  expect_close(y, yr, 0.0, "transpose+reshape forward");
  at::Tensor loss = ops::add(probe_loss(y, 16), ops::add(probe_loss(r, 17), probe_loss(t, 18)));
  at::Tensor loss_ref = probe_loss_ref(yr, 16) + probe_loss_ref(xr.reshape({6, -1}), 17) + probe_loss_ref(xr.transpose(0, 2), 18);
  expect_close(grads(loss, {x})[0], grads(loss_ref, {xr})[0], kTol, "reshape/transpose grad");
}

TEST(NnOpsTest, ReshapeAndTransposeRejectBadShapesNamingThem) {
  at::Tensor x = random({2, 3}, 19);
  try {
    ops::reshape(x, {4, 2});
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4, 2]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ops::transpose(x, 0, 2), std::invalid_argument);
}

TEST(NnOpsTest, NarrowMatchesLibTorchAndItsGradientIsZeroOutsideTheRows) {
  at::Tensor x0 = random({6, 4}, 23);
  at::Tensor x = leaf(x0), xr = leaf(x0);
  at::Tensor a = ops::narrow(x, 0, 0, 2), b = ops::narrow(x, 0, 4, 2), c = ops::narrow(x, 1, 1, 3);
  EXPECT_EQ(a.data_ptr(), x.data_ptr()) << "a narrow costs no memory";
  expect_close(b, xr.narrow(0, 4, 2), 0.0, "narrow forward");
  at::Tensor loss = ops::add(probe_loss(a, 24), ops::add(probe_loss(b, 25), probe_loss(c, 26)));
  at::Tensor loss_ref =
      probe_loss_ref(xr.narrow(0, 0, 2), 24) + probe_loss_ref(xr.narrow(0, 4, 2), 25) + probe_loss_ref(xr.narrow(1, 1, 3), 26);
  const at::Tensor g = grads(loss, {x})[0];
  expect_close(g, grads(loss_ref, {xr})[0], kTol, "narrow grad");
  EXPECT_EQ(g.narrow(0, 2, 2).narrow(1, 0, 1).abs().sum().item<double>(), 0.0) << "rows 2-3 of column 0 are in no slice";
  EXPECT_THROW(ops::narrow(x, 0, 5, 2), std::invalid_argument);
  EXPECT_THROW(ops::narrow(x, 2, 0, 1), std::invalid_argument);
  EXPECT_EQ(saves_of([&] { ops::narrow(x, 0, 1, 2); }), 0u);
}

TEST(NnOpsTest, EachOpSavesWhatUpstreamSaves) {
  at::Tensor x = leaf(random({3, 4}, 20)), w = leaf(random({4}, 21)), table = leaf(random({6, 4}, 22));
  at::Tensor ids = at::tensor(std::vector<int64_t>{0, 5});
  EXPECT_EQ(saves_of([&] { ops::softmax(x, -1); }), 1u) << "softmax: its output";
  EXPECT_EQ(saves_of([&] { ops::rms_norm(x, w, 1e-6); }), 3u) << "rms_norm: input, rstd, weight";
  EXPECT_EQ(saves_of([&] { ops::rms_norm(x, w.detach(), 1e-6); }), 3u) << "rms_norm, frozen weight";
  EXPECT_EQ(saves_of([&] { ops::rms_norm(x.detach(), w, 1e-6); }), 2u) << "rms_norm, input without grad: input, rstd";
  EXPECT_EQ(saves_of([&] { ops::embedding(table, ids); }), 1u) << "embedding: the ids";
  EXPECT_EQ(saves_of([&] { ops::reshape(x, {12}); }), 0u);
  EXPECT_EQ(saves_of([&] { ops::transpose(x, 0, 1); }), 0u);
}

}  // namespace
}  // namespace shardfuzz::nn
