// LoRA on Linear: the base is frozen (no grad reaches weight or bias), the adapters get exactly
// the gradients of plain LibTorch's x W^T + b + (alpha/r) (x A^T) B^T, and enable_lora consumes its
// Init in a fixed order and rejects bad ranks naming the module.
#include "runtime/nn/linear.h"

#include "runtime/nn/ops.h"
#include "tests/nn/reference.h"

namespace shardfuzz::nn {
namespace {

using testing::expect_close;
using testing::leaf;
using testing::random;

TEST(NnLoraTest, FreezesTheBaseAndRegistersBothAdapters) {
  Init init(5);
  Linear lin(6, 4, init);
  EXPECT_FALSE(lin.has_lora());
  lin.enable_lora(2, 4.0, init);
  EXPECT_TRUE(lin.has_lora());
  EXPECT_EQ(lin.lora_rank(), 2);
  EXPECT_FALSE(lin.param("weight").requires_grad());
  EXPECT_FALSE(lin.param("bias").requires_grad());
  EXPECT_TRUE(lin.param("lora_a").requires_grad());
  EXPECT_TRUE(lin.param("lora_b").requires_grad());
  EXPECT_EQ(lin.param("lora_a").sizes(), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(lin.param("lora_b").sizes(), (std::vector<int64_t>{4, 2}));
  EXPECT_GT(lin.param("lora_b").abs().sum().item<double>(), 0.0) << "B is nonzero by design (see linear.h)";
  std::vector<std::string> names;
  for (auto& [name, p] : lin.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "bias", "lora_a", "lora_b"}));
}

TEST(NnLoraTest, ForwardAndAdapterGradientsMatchPlainLibTorchAndTheBaseGetsNone) {
  Init init(6);
  Linear lin(6, 4, init);
  lin.enable_lora(3, 6.0, init);
  const double s = 6.0 / 3.0;
  at::Tensor w = lin.param("weight"), b = lin.param("bias"), a = lin.param("lora_a"), bb = lin.param("lora_b");
  at::Tensor ar = leaf(a), bbr = leaf(bb);
  at::Tensor x0 = random({5, 6}, 7, at::kFloat);
  at::Tensor x = leaf(x0), xr = leaf(x0);
  at::Tensor y = lin(x);
  at::Tensor yr = xr.matmul(w.t()) + b + s * xr.matmul(ar.t()).matmul(bbr.t());
  expect_close(y, yr, 1e-5, "lora forward");
  at::Tensor probe = random({5, 4}, 8, at::kFloat);
  ops::sum_all(ops::mul(y, probe)).backward();
  (yr * probe).sum().backward();
  EXPECT_FALSE(lin.param("weight").grad().defined()) << "frozen base weight got a gradient";
  EXPECT_FALSE(lin.param("bias").grad().defined()) << "frozen base bias got a gradient";
  expect_close(lin.param("lora_a").grad(), ar.grad(), 1e-5, "grad lora_a");
  expect_close(lin.param("lora_b").grad(), bbr.grad(), 1e-5, "grad lora_b");
  expect_close(x.grad(), xr.grad(), 1e-5, "grad x");
  EXPECT_GT(lin.param("lora_a").grad().abs().sum().item<double>(), 0.0) << "A learns from step 1";
}

TEST(NnLoraTest, WithoutBiasAndSameSeedGivesTheSameAdapters) {
  Init i1(9), i2(9);
  Linear l1(4, 4, i1, false), l2(4, 4, i2, false);
  l1.enable_lora(1, 1.0, i1);
  l2.enable_lora(1, 1.0, i2);
  EXPECT_TRUE(l1.param("lora_a").equal(l2.param("lora_a")));
  EXPECT_TRUE(l1.param("lora_b").equal(l2.param("lora_b")));
  at::Tensor x = random({3, 4}, 10, at::kFloat);
  at::Tensor want = x.matmul(l1.param("weight").t()) +
                    x.matmul(l1.param("lora_a").t()).matmul(l1.param("lora_b").t());
  expect_close(l1(x), want, 1e-5, "lora forward without bias");
}

TEST(NnLoraTest, RejectsBadRanksAndASecondEnable) {
  Init init(11);
  Linear lin(6, 4, init);
  try {
    lin.enable_lora(5, 1.0, init);
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rank 5"), std::string::npos) << e.what();
  }
  EXPECT_THROW(lin.enable_lora(0, 1.0, init), std::invalid_argument);
  EXPECT_FALSE(lin.has_lora());
  lin.enable_lora(2, 1.0, init);
  EXPECT_THROW(lin.enable_lora(2, 1.0, init), std::logic_error);
}

}  // namespace
}  // namespace shardfuzz::nn
