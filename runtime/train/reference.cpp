// Gradient accumulation over the ranks' batches and micro-batches, scaled by 1/(world x micro).
#include "runtime/train/reference.h"

#include "runtime/nn/ops.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <stdexcept>
#include <string>

namespace shardfuzz::train {
namespace {

// A step's end: each rank's loss (its micro-batches' mean), then the update on full tensors.
void end_step(ReferenceOptimizer& opt, const std::vector<double>& totals, int micro_batches, ReferenceRun& run) {
  std::vector<double> losses;
  for (double t : totals) losses.push_back(t / micro_batches);
  opt.step();
  opt.zero_grad();
  run.losses.push_back(std::move(losses));
}

}  // namespace

ReferenceRun run_reference(nn::Module& model, int world_size, int steps, const StepPlan& plan, const InputFn& input,
                           const LossFn& loss_fn, const OptimizerConfig& optimizer) {
  std::vector<at::Tensor*> params;
  for (auto& [name, p] : model.named_parameters()) params.push_back(p);
  ReferenceOptimizer opt(params, optimizer);
  ReferenceRun run;
  for (int s = 0; s < steps; ++s) {
    std::vector<double> losses;
    for (int r = 0; r < world_size; ++r) {
      double total = 0;
      for (int m = 0; m < plan.micro_batches; ++m) {
        at::Tensor loss;
        for (int f = 0; f < plan.forwards_per_backward; ++f) {
          at::Tensor l = loss_fn(model(input(r, s, m, f)));
          loss = loss.defined() ? nn::ops::add(loss, l) : l;
        }
        total += loss.item<double>();
        // A loss without grad (everything frozen or under no_grad) has nothing to accumulate.
        if (loss.requires_grad())
          torch::autograd::backward({nn::ops::scale(loss, 1.0 / (world_size * plan.micro_batches))});
      }
      losses.push_back(total / plan.micro_batches);
    }
    opt.step();
    opt.zero_grad();
    run.losses.push_back(std::move(losses));
  }
  return run;
}

ReferenceRun run_reference_batched(nn::Module& model, int world_size, int steps, const StepPlan& plan,
                                   const InputFn& input, const LossFn& loss_fn, const OptimizerConfig& optimizer) {
  std::vector<at::Tensor*> params;
  for (auto& [name, p] : model.named_parameters()) params.push_back(p);
  ReferenceOptimizer opt(params, optimizer);
  ReferenceRun run;
  const auto world = static_cast<std::size_t>(world_size);
  for (int s = 0; s < steps; ++s) {
    std::vector<double> totals(world, 0.0);
    for (int m = 0; m < plan.micro_batches; ++m) {
      std::vector<at::Tensor> losses(world);  // each rank's loss over this micro-batch's forwards
      for (int f = 0; f < plan.forwards_per_backward; ++f) {
        std::vector<at::Tensor> batches;
        for (int r = 0; r < world_size; ++r) batches.push_back(input(r, s, m, f));
        const at::Tensor out = model(at::cat(batches, 0));
        if (out.size(0) != batches[0].size(0) * world_size)
          throw std::logic_error("run_reference_batched: the model's output has " + std::to_string(out.size(0)) +
                                 " rows for " + std::to_string(world_size) + " batches of " +
                                 std::to_string(batches[0].size(0)));
        const int64_t n = batches[0].size(0);
        for (std::size_t r = 0; r < world; ++r) {
          at::Tensor l = loss_fn(out.narrow(0, static_cast<int64_t>(r) * n, n));  // ATen's autograd slices it
          losses[r] = losses[r].defined() ? nn::ops::add(losses[r], l) : l;
        }
      }
      at::Tensor sum;
      for (std::size_t r = 0; r < world; ++r) {
        totals[r] += losses[r].item<double>();
        sum = sum.defined() ? nn::ops::add(sum, losses[r]) : losses[r];
      }
      if (sum.requires_grad())
        torch::autograd::backward({nn::ops::scale(sum, 1.0 / (world_size * plan.micro_batches))});
    }
    end_step(opt, totals, plan.micro_batches, run);
  }
  return run;
}

ReferenceRun run_reference(nn::Module& model, int world_size, int steps, const StepPlan& plan, const InputFn& input,
                           const LossFn& loss_fn, const OptimizerConfig& optimizer,
                           const fsdp::MixedPrecisionPolicy& mp) {
  if (!mp.param_dtype) return run_reference(model, world_size, steps, plan, input, loss_fn, optimizer);
  const c10::ScalarType compute = *mp.param_dtype;
  std::vector<at::Tensor*> params;
  for (auto& [name, p] : model.named_parameters()) params.push_back(p);
  ReferenceOptimizer opt(params, optimizer);
  ReferenceRun run;
  for (int s = 0; s < steps; ++s) {
    std::vector<double> totals(static_cast<std::size_t>(world_size), 0.0);
    for (int m = 0; m < plan.micro_batches; ++m) {
      std::vector<at::Tensor> reduced(params.size());  // this micro-batch's gradient sum, reduce dtype
      for (int r = 0; r < world_size; ++r) {
        std::vector<at::Tensor> masters;
        for (at::Tensor* p : params) {
          masters.push_back(*p);
          at::Tensor copy = p->detach().to(compute);
          copy.set_requires_grad(p->requires_grad());
          *p = copy;
        }
        at::Tensor loss;
        for (int f = 0; f < plan.forwards_per_backward; ++f) {
          at::Tensor x = input(r, s, m, f);
          if (x.is_floating_point()) x = nn::ops::to_dtype(x, compute);
          at::Tensor l = loss_fn(model(x));
          loss = loss.defined() ? nn::ops::add(loss, l) : l;
        }
        totals[static_cast<std::size_t>(r)] += loss.item<double>();
        if (loss.requires_grad()) torch::autograd::backward({nn::ops::scale(loss, 1.0 / plan.micro_batches)});
        for (std::size_t i = 0; i < params.size(); ++i) {
          at::Tensor g = params[i]->grad();
          *params[i] = masters[i];
          if (!g.defined()) continue;
          g = g.to(mp.reduce_dtype.value_or(g.scalar_type()));
          reduced[i] = reduced[i].defined() ? reduced[i].add(g) : g.clone();
        }
      }
      for (std::size_t i = 0; i < params.size(); ++i) {
        if (!reduced[i].defined()) continue;
        at::Tensor avg = reduced[i].div(world_size).to(params[i]->scalar_type());
        at::Tensor& grad = params[i]->mutable_grad();
        grad = grad.defined() ? grad.add(avg) : avg;
      }
    }
    end_step(opt, totals, plan.micro_batches, run);
  }
  return run;
}

ReferenceRun run_reference(nn::Module& model, int world_size, int steps,
                           const std::function<at::Tensor(int rank, int step)>& input, const LossFn& loss_fn,
                           const OptimizerConfig& optimizer) {
  return run_reference(
      model, world_size, steps, StepPlan{}, [&](int r, int s, int, int) { return input(r, s); }, loss_fn, optimizer);
}

}  // namespace shardfuzz::train
