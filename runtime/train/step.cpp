// The training step.
#include "runtime/train/step.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>

namespace shardfuzz::train {

double train_step(nn::Module& model, const at::Tensor& input, const LossFn& loss_fn, ShardedOptimizer* optimizer,
                  fsdp::RankRuntime& runtime, int step) {
  runtime.set_step(step);
  runtime.record("step_begin", "", {}, "train");
  at::Tensor loss = loss_fn(model(input));
  runtime.record("forward_end", "", {}, "train");
  torch::autograd::backward({loss});
  runtime.record("backward_end", "", {}, "train");
  if (optimizer) {
    optimizer->step();
    runtime.record("optimizer_step", "", {}, "train");
    optimizer->zero_grad();
    runtime.record("zero_grad", "", {}, "train");
  }
  const double value = loss.item<double>();
  loss = at::Tensor();
  runtime.record("step_end", "", {{"loss", value}}, "train");
  return value;
}

at::Tensor make_input(uint64_t seed, int rank, int step, int64_t tokens, int64_t dim, bool requires_grad) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed * 1000003ULL + static_cast<uint64_t>(step) * 1009ULL +
                                                      static_cast<uint64_t>(rank));
  at::Tensor x = at::randn({tokens, dim}, gen, at::TensorOptions().dtype(at::kFloat));
  x.set_requires_grad(requires_grad);
  return x;
}

}  // namespace shardfuzz::train
