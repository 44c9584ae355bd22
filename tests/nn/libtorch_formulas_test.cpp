// The reference's switch (runtime/autograd/libtorch_formulas.h): inside a LibTorchFormulas scope
// every differentiable op of nn/ops.h and nn/routing_ops.h records LibTorch's own node, outside it
// the runtime's; both give the same values and gradients (double, 1e-9). So the reference really is
// differentiated by an implementation the runtime does not share, and each runtime formula is
// checked against LibTorch's on the way.
#include "runtime/autograd/libtorch_formulas.h"
#include "runtime/nn/ops.h"
#include "runtime/nn/routing_ops.h"

#include "tests/nn/reference.h"

#include <torch/csrc/autograd/function.h>

#include <cctype>
#include <functional>
#include <string>
#include <thread>

namespace shardfuzz::nn {
namespace {

using testing::expect_close;
using testing::grads;
using testing::leaf;
using testing::random;

struct OpCase {
  std::string name;
  std::vector<std::vector<int64_t>> inputs;  // random double leaves of these sizes
  std::function<at::Tensor(const std::vector<at::Tensor>&)> op;
};

at::Tensor ids(std::vector<int64_t> v) { return at::tensor(v, at::kLong); }

std::vector<OpCase> op_cases() {
  const at::Tensor rows = ids({2, 0, 2, 3});
  return {
      {"linear", {{3, 4}, {5, 4}, {5}}, [](auto& x) { return ops::linear(x[0], x[1], x[2]); }},
      {"matmul", {{2, 3, 4}, {2, 4, 5}}, [](auto& x) { return ops::matmul(x[0], x[1]); }},
      {"add", {{3, 4}, {4}}, [](auto& x) { return ops::add(x[0], x[1]); }},
      {"mul", {{3, 4}, {3, 1}}, [](auto& x) { return ops::mul(x[0], x[1]); }},
      {"scale", {{3, 4}}, [](auto& x) { return ops::scale(x[0], -2.5); }},
      {"to_dtype", {{3, 4}}, [](auto& x) { return ops::to_dtype(x[0], at::kFloat); }},
      {"relu", {{4, 5}}, [](auto& x) { return ops::relu(x[0]); }},
      {"sigmoid", {{4, 5}}, [](auto& x) { return ops::sigmoid(x[0]); }},
      {"mean", {{3, 4}}, [](auto& x) { return ops::mean(x[0], 1, false); }},
      {"sum", {{3, 4}}, [](auto& x) { return ops::sum(x[0], 0, true); }},
      {"sum_all", {{3, 4}}, [](auto& x) { return ops::sum_all(x[0]); }},
      {"unsqueeze", {{3, 4}}, [](auto& x) { return ops::unsqueeze(x[0], 1); }},
      {"reshape", {{3, 4}}, [](auto& x) { return ops::reshape(x[0], {2, -1}); }},
      {"transpose", {{3, 4}}, [](auto& x) { return ops::transpose(x[0], 0, 1); }},
      {"narrow", {{5, 4}}, [](auto& x) { return ops::narrow(x[0], 0, 1, 3); }},
      {"softmax", {{3, 4}}, [](auto& x) { return ops::softmax(x[0], -1); }},
      {"rms_norm", {{3, 6}, {6}}, [](auto& x) { return ops::rms_norm(x[0], x[1], 1e-6); }},
      {"embedding", {{5, 3}}, [](auto& x) { return ops::embedding(x[0], ids({4, 1, 1, 0})); }},
      {"index_rows", {{4, 3}}, [rows](auto& x) { return routing::index_rows(x[0], rows); }},
      {"index_add_rows", {{5, 3}, {4, 3}}, [rows](auto& x) { return routing::index_add_rows(x[0], rows, x[1]); }},
      {"topk_weights", {{3, 4}}, [](auto& x) { return routing::topk_weights(x[0], ids({1, 3, 0, 0, 2, 1}).view({3, 2})); }},
      {"grouped_mm", {{5, 3}, {3, 3, 2}}, [](auto& x) { return routing::grouped_mm(x[0], x[1], {2, 0, 3}); }},
  };
}

// The op's output, and the gradients of sum(output * probe) for its inputs.
struct Outcome {
  at::Tensor out;
  std::vector<at::Tensor> grads;
  std::string node;
};
Outcome run(const OpCase& c, uint64_t seed) {
  std::vector<at::Tensor> in;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) in.push_back(leaf(random(c.inputs[i], seed + i)));
  at::Tensor y = c.op(in);
  at::Tensor probe = random(y.sizes().vec(), seed + 100).to(y.scalar_type());
  Outcome o{y.detach(), {}, y.grad_fn() ? y.grad_fn()->name() : "(none)"};
  o.grads = grads((y * probe).sum(), in);
  return o;
}

TEST(LibTorchFormulas, EveryOpRecordsLibTorchsNodeInsideTheScopeAndAgreesWithTheRuntimesFormula) {
  for (const OpCase& c : op_cases()) {
    SCOPED_TRACE(c.name);
    const Outcome ours = run(c, 7);
    Outcome theirs;
    {
      const autograd::LibTorchFormulas libtorch;
      EXPECT_TRUE(autograd::libtorch_formulas());
      theirs = run(c, 7);
    }
    EXPECT_FALSE(autograd::libtorch_formulas());
    // LibTorch's generated nodes are numbered (ReluBackward0); the runtime's LambdaNodes are not.
    EXPECT_TRUE(!theirs.node.empty() && std::isdigit(static_cast<unsigned char>(theirs.node.back()))) << theirs.node;
    EXPECT_FALSE(!ours.node.empty() && std::isdigit(static_cast<unsigned char>(ours.node.back()))) << ours.node;
    expect_close(ours.out, theirs.out, 1e-9, c.name + " forward");
    ASSERT_EQ(ours.grads.size(), theirs.grads.size());
    for (std::size_t i = 0; i < ours.grads.size(); ++i)
      expect_close(ours.grads[i], theirs.grads[i], 1e-9, c.name + " gradient of input " + std::to_string(i));
  }
}

TEST(LibTorchFormulas, ScopesNestAndEachThreadHasItsOwn) {
  {
    const autograd::LibTorchFormulas outer;
    {
      const autograd::LibTorchFormulas inner;
    }
    EXPECT_TRUE(autograd::libtorch_formulas());
    bool other_thread = true;
    std::thread([&] { other_thread = autograd::libtorch_formulas(); }).join();
    EXPECT_FALSE(other_thread);
  }
  EXPECT_FALSE(autograd::libtorch_formulas());
}

}  // namespace
}  // namespace shardfuzz::nn
