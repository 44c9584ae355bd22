// The RMSNorm and Embedding modules: parameters built deterministically from their Init, forward
// and gradients equal to plain LibTorch, errors that name the module.
#include "runtime/nn/embedding.h"
#include "runtime/nn/rms_norm.h"

#include "runtime/nn/ops.h"
#include "tests/nn/reference.h"

namespace shardfuzz::nn {
namespace {

using testing::expect_close;
using testing::grads;
using testing::leaf;
using testing::random;

TEST(NnRmsNormTest, WeightIsNearOnesAndForwardAndGradsMatchLibTorch) {
  Init i1(1), i2(1);
  RMSNorm norm(6, i1), again(6, i2);
  at::Tensor w = norm.param("weight");
  EXPECT_TRUE(w.equal(again.param("weight")));
  EXPECT_LT((w - 1).abs().max().item<double>(), 0.2);
  EXPECT_GT((w - 1).abs().max().item<double>(), 0.0);
  EXPECT_EQ(norm.eps(), 1e-6);
  at::Tensor x0 = random({3, 6}, 2, at::kFloat);
  at::Tensor x = leaf(x0), xr = leaf(x0), wr = leaf(w);
  at::Tensor y = norm(x);
  at::Tensor yr = xr * at::rsqrt(xr.pow(2).mean(-1, true) + 1e-6) * wr;
  expect_close(y, yr, 1e-5, "rms_norm forward");
  at::Tensor probe = random({3, 6}, 3, at::kFloat);
  auto g = grads(ops::sum_all(ops::mul(y, probe)), {x, w});
  auto gr = grads((yr * probe).sum(), {xr, wr});
  expect_close(g[0], gr[0], 1e-5, "grad x");
  expect_close(g[1], gr[1], 1e-5, "grad weight");
}

TEST(NnRmsNormTest, AWrongInputNamesTheModule) {
  Init init(1);
  RMSNorm norm(6, init);
  try {
    norm(random({2, 5}, 1, at::kFloat));
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("module 'root' (RMSNorm)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(RMSNorm(6, init, 0.0), std::invalid_argument);
}

TEST(NnEmbeddingTest, LooksUpRowsAndAccumulatesRepeatedIds) {
  Init init(4);
  Embedding emb(10, 3, init);
  at::Tensor table = emb.param("weight");
  EXPECT_EQ(table.sizes(), (std::vector<int64_t>{10, 3}));
  at::Tensor ids = at::tensor(std::vector<int64_t>{9, 2, 2, 0, 2});
  at::Tensor y = emb(ids);
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{5, 3}));
  EXPECT_TRUE(y[1].equal(table[2]));
  EXPECT_TRUE(y[0].equal(table[9]));
  at::Tensor tr = leaf(table);
  at::Tensor probe = random({5, 3}, 5, at::kFloat);
  at::Tensor g = grads(ops::sum_all(ops::mul(y, probe)), {table})[0];
  at::Tensor gr = grads((at::embedding(tr, ids) * probe).sum(), {tr})[0];
  expect_close(g, gr, 1e-6, "embedding grad");
  expect_close(g[2], probe[1] + probe[2] + probe[4], 1e-6, "row 2 is the sum of its three uses");
}

TEST(NnEmbeddingTest, AnOutOfRangeIdNamesTheModule) {
  Init init(4);
  Embedding emb(10, 3, init);
  try {
    emb(at::tensor(std::vector<int64_t>{3, 12}));
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("(Embedding)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("id 12"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace shardfuzz::nn
