// Attention against a plain LibTorch multi-head attention over the same weights: forward and the
// gradients of x and of q/k/v/o's weights, causal and not, 1 and 2 heads (float, tol 1e-5); and
// the fixed order in which it consumes its Init.
#include "runtime/nn/attention.h"

#include "runtime/nn/ops.h"
#include "tests/nn/reference.h"

#include <cmath>
#include <limits>

namespace shardfuzz::nn {
namespace {

using testing::expect_close;
using testing::grads;
using testing::leaf;
using testing::random;

at::Tensor reference_attention(const at::Tensor& x, const at::Tensor& wq, const at::Tensor& wk, const at::Tensor& wv,
                               const at::Tensor& wo, int64_t heads, bool causal) {
  const int64_t t = x.size(0), dim = x.size(1), d = dim / heads;
  auto split = [&](const at::Tensor& y) { return y.view({t, heads, d}).transpose(0, 1); };
  at::Tensor q = split(x.matmul(wq.t())), k = split(x.matmul(wk.t())), v = split(x.matmul(wv.t()));
  at::Tensor scores = q.matmul(k.transpose(1, 2)) / std::sqrt(static_cast<double>(d));
  if (causal) scores = scores.masked_fill(at::ones({t, t}, at::kBool).triu(1), -std::numeric_limits<double>::infinity());
  at::Tensor ctx = at::softmax(scores, -1).matmul(v).transpose(0, 1).reshape({t, dim});
  return ctx.matmul(wo.t());
}

struct Case {
  int64_t heads;
  bool causal;
};

class NnAttentionTest : public ::testing::TestWithParam<Case> {};

TEST_P(NnAttentionTest, ForwardAndGradientsMatchPlainLibTorch) {
  const auto [heads, causal] = GetParam();
  const int64_t t = 5, dim = 8;
  Init init(42);
  Attention attn(dim, heads, causal, init);
  at::Tensor x0 = random({t, dim}, 1, at::kFloat);
  at::Tensor x = leaf(x0), xr = leaf(x0);
  std::vector<at::Tensor> w, wr;
  for (const char* name : {"q", "k", "v", "o"}) {
    w.push_back(attn.find(name)->param("weight"));
    wr.push_back(leaf(w.back()));
  }
  at::Tensor y = attn(x);
  at::Tensor yr = reference_attention(xr, wr[0], wr[1], wr[2], wr[3], heads, causal);
  expect_close(y, yr, 1e-5, "attention forward");
  at::Tensor probe = random({t, dim}, 2, at::kFloat);
  std::vector<at::Tensor> wrt{x, w[0], w[1], w[2], w[3]}, wrt_ref{xr, wr[0], wr[1], wr[2], wr[3]};
  auto g = grads(ops::sum_all(ops::mul(y, probe)), wrt);
  auto gr = grads((yr * probe).sum(), wrt_ref);
  const char* names[] = {"x", "q.weight", "k.weight", "v.weight", "o.weight"};
  for (std::size_t i = 0; i < g.size(); ++i) expect_close(g[i], gr[i], 1e-5, std::string("grad ") + names[i]);
}

TEST_P(NnAttentionTest, CausalOutputOfTheFirstTokenIgnoresLaterTokens) {
  const auto [heads, causal] = GetParam();
  Init init(3);
  Attention attn(8, heads, causal, init);
  at::Tensor x = random({4, 8}, 4, at::kFloat);
  at::Tensor x2 = x.clone();
  x2[3] += 1.0;
  const double diff = (attn(x)[0] - attn(x2)[0]).abs().max().item<double>();
  if (causal)
    EXPECT_EQ(diff, 0.0);
  else
    EXPECT_GT(diff, 0.0);
}

INSTANTIATE_TEST_SUITE_P(NnHeads, NnAttentionTest,
                         ::testing::Values(Case{1, false}, Case{1, true}, Case{2, false}, Case{2, true}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return "heads" + std::to_string(info.param.heads) + (info.param.causal ? "_causal" : "_full");
                         });

TEST(NnAttentionBuildTest, ConsumesItsInitAsQKVOInOrder) {
  Init a(7), b(7);
  Attention attn(6, 3, true, a);
  for (const char* name : {"q", "k", "v", "o"}) {
    Linear expected(6, 6, b, /*bias=*/false);
    EXPECT_TRUE(attn.find(name)->param("weight").equal(expected.param("weight"))) << name;
  }
  std::vector<std::string> names;
  for (auto& [name, p] : attn.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"q.weight", "k.weight", "v.weight", "o.weight"}));
}

TEST(NnAttentionBuildTest, RejectsADimNotDivisibleByHeadsAndAWrongInput) {
  Init init(1);
  try {
    Attention(10, 3, false, init);
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("dim 10"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("heads 3"), std::string::npos) << e.what();
  }
  Attention attn(4, 2, false, init);
  EXPECT_THROW(attn(random({2, 3, 4}, 1, at::kFloat)), std::invalid_argument);
}

}  // namespace
}  // namespace shardfuzz::nn
