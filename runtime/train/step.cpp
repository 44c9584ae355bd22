// The training step.
#include "runtime/train/step.h"

#include "runtime/fsdp/state.h"
#include "runtime/nn/ops.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <limits>

namespace shardfuzz::train {
namespace {

at::Generator generator(uint64_t seed, int rank, int step, int stream) {
  return at::make_generator<at::CPUGeneratorImpl>(seed * 1000003ULL + static_cast<uint64_t>(step) * 1009ULL +
                                                  static_cast<uint64_t>(rank) +
                                                  static_cast<uint64_t>(stream) * 0x9E3779B97F4A7C15ULL);
}

void set_is_last_backward(nn::Module& model, bool is_last) {
  if (fsdp::FSDPState* root = fsdp::fsdp_state_of(model)) root->set_is_last_backward(is_last);
}

}  // namespace

double train_step(nn::Module& model, const StepPlan& plan, const BatchFn& batch, const LossFn& loss_fn,
                  ShardedOptimizer* optimizer, fsdp::RankRuntime& runtime, int step) {
  runtime.set_step(step);
  runtime.record(memory::Event::StepBegin, "", {});
  double total = 0;
  for (int m = 0; m < plan.micro_batches; ++m) {
    at::Tensor loss;
    for (int f = 0; f < plan.forwards_per_backward; ++f) {
      at::Tensor l = loss_fn(model(batch(m, f)));
      loss = loss.defined() ? nn::ops::add(loss, l) : l;
    }
    runtime.record(memory::Event::ForwardEnd, "", {{"micro_batch", m}});
    // A shape-only run's loss has no value: NaN says so (its properties skip what needs values).
    total += loss.is_meta() ? std::numeric_limits<double>::quiet_NaN() : loss.item<double>();
    if (plan.micro_batches > 1) {
      set_is_last_backward(model, m + 1 == plan.micro_batches);
      loss = nn::ops::scale(loss, 1.0 / plan.micro_batches);
    }
    torch::autograd::backward({loss});
    runtime.record(memory::Event::BackwardEnd, "", {{"micro_batch", m}});
  }
  if (optimizer) {
    optimizer->step();
    runtime.record(memory::Event::OptimizerStep, "", {});
    optimizer->zero_grad();
    runtime.record(memory::Event::ZeroGrad, "", {});
  }
  if (plan.eval_forward) {
    torch::autograd::AutoGradMode no_grad(false);
    at::Tensor out = model(batch(plan.micro_batches, 0));
    (void)out;
    runtime.record(memory::Event::EvalForwardEnd, "", {});
  }
  const double value = total / plan.micro_batches;
  runtime.record(memory::Event::StepEnd, "", {{"loss", value}});
  return value;
}

double train_step(nn::Module& model, const at::Tensor& input, const LossFn& loss_fn, ShardedOptimizer* optimizer,
                  fsdp::RankRuntime& runtime, int step) {
  return train_step(model, StepPlan{}, [&](int, int) { return input; }, loss_fn, optimizer, runtime, step);
}

at::Tensor make_input(uint64_t seed, int rank, int step, int64_t tokens, int64_t dim, bool requires_grad, int stream) {
  auto gen = generator(seed, rank, step, stream);
  at::Tensor x = at::randn({tokens, dim}, gen, at::TensorOptions().dtype(at::kFloat));
  x.set_requires_grad(requires_grad);
  return x;
}

at::Tensor make_tokens(uint64_t seed, int rank, int step, int64_t tokens, int64_t vocab, int stream) {
  auto gen = generator(seed, rank, step, stream);
  return at::randint(vocab, {tokens}, gen, at::TensorOptions().dtype(at::kLong));
}

}  // namespace shardfuzz::train
