// Gradient accumulation over the ranks' batches and micro-batches, scaled by 1/(world x micro).
#include "runtime/train/reference.h"

#include "runtime/autograd/libtorch_formulas.h"
#include "runtime/nn/ops.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <optional>

namespace shardfuzz::train {

namespace {

// One step's micro-batch m with the ranks' batches as one: each forward sees every rank's rows,
// each rank's loss is taken on its own rows; the backward of their sum, scaled as the ranks'
// reduction and the accumulation scale them. Adds each rank's loss to `totals`.
void micro_batch_of_all_ranks(nn::Module& model, int world_size, int s, int m, const StepPlan& plan,
                              const InputFn& input, const LossFn& loss_fn, std::vector<double>& totals) {
  std::vector<at::Tensor> rank_losses(static_cast<std::size_t>(world_size));
  for (int f = 0; f < plan.forwards_per_backward; ++f) {
    // The reference compares parameters only: the inputs' own gradients are not needed.
    std::vector<at::Tensor> rows;
    for (int r = 0; r < world_size; ++r) rows.push_back(input(r, s, m, f).detach());
    at::Tensor batch = at::cat(rows, 0);
    at::Tensor out = model(batch);
    const int64_t per_rank = out.size(0) / world_size;
    for (int r = 0; r < world_size; ++r) {
      at::Tensor l = loss_fn(nn::ops::narrow(out, 0, r * per_rank, per_rank));
      auto& loss = rank_losses[static_cast<std::size_t>(r)];
      loss = loss.defined() ? nn::ops::add(loss, l) : l;
    }
  }
  at::Tensor sum;
  for (int r = 0; r < world_size; ++r) {
    const at::Tensor& loss = rank_losses[static_cast<std::size_t>(r)];
    totals[static_cast<std::size_t>(r)] += loss.item<double>();
    sum = sum.defined() ? nn::ops::add(sum, loss) : loss;
  }
  if (sum.requires_grad()) torch::autograd::backward({nn::ops::scale(sum, 1.0 / (world_size * plan.micro_batches))});
}

// One step's micro-batch m of rank r alone: its forwards, then the backward of their loss sum,
// scaled as the ranks' reduction and the accumulation scale it. Returns the rank's loss.
double micro_batch_of_one_rank(nn::Module& model, int world_size, int r, int s, int m, const StepPlan& plan,
                               const InputFn& input, const LossFn& loss_fn) {
  at::Tensor loss;
  for (int f = 0; f < plan.forwards_per_backward; ++f) {
    at::Tensor l = loss_fn(model(input(r, s, m, f)));
    loss = loss.defined() ? nn::ops::add(loss, l) : l;
  }
  // A loss without grad (everything frozen or under no_grad) has nothing to accumulate.
  if (loss.requires_grad()) torch::autograd::backward({nn::ops::scale(loss, 1.0 / (world_size * plan.micro_batches))});
  return loss.item<double>();
}

}  // namespace

ReferenceRun run_reference(nn::Module& model, int world_size, int steps, const StepPlan& plan, const InputFn& input,
                           const LossFn& loss_fn, const OptimizerConfig& optimizer, bool ranks_as_one_batch) {
  const autograd::LibTorchFormulas libtorch_formulas;
  std::vector<at::Tensor*> params;
  for (auto& [name, p] : model.named_parameters()) params.push_back(p);
  ReferenceOptimizer opt(params, optimizer);
  ReferenceRun run;
  for (int s = 0; s < steps; ++s) {
    std::vector<double> totals(static_cast<std::size_t>(world_size), 0.0);
    if (ranks_as_one_batch) {
      for (int m = 0; m < plan.micro_batches; ++m)
        micro_batch_of_all_ranks(model, world_size, s, m, plan, input, loss_fn, totals);
    } else {
      for (int r = 0; r < world_size; ++r)
        for (int m = 0; m < plan.micro_batches; ++m)
          totals[static_cast<std::size_t>(r)] +=
              micro_batch_of_one_rank(model, world_size, r, s, m, plan, input, loss_fn);
    }
    std::vector<double> losses;
    for (double t : totals) losses.push_back(t / plan.micro_batches);
    opt.step();
    opt.zero_grad();
    run.losses.push_back(std::move(losses));
  }
  return run;
}

ReferenceRun run_reference(nn::Module& model, int world_size, int steps, const StepPlan& plan, const InputFn& input,
                           const LossFn& loss_fn, const OptimizerConfig& optimizer,
                           const fsdp::MixedPrecisionPolicy& mp, bool ranks_as_one_batch) {
  // Without a param dtype the ranks compute in the stored dtypes: the plain reference, batched if asked.
  if (!mp.param_dtype)
    return run_reference(model, world_size, steps, plan, input, loss_fn, optimizer, ranks_as_one_batch);
  const c10::ScalarType compute = *mp.param_dtype;
  // In a low precision the two sides' formulas round differently, and AdamW's normalised update
  // turns a rounding of a near-zero gradient into an lr-sized step (a strict campaign found a
  // bfloat16 AdamW run at world 1 6% off over two steps): there the reference keeps the runtime's
  // formulas, and float32 scenarios, most of them, judge the formulas.
  std::optional<autograd::LibTorchFormulas> libtorch_formulas;
  if (compute == c10::ScalarType::Float && mp.reduce_dtype.value_or(compute) == c10::ScalarType::Float)
    libtorch_formulas.emplace();
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
    std::vector<double> losses;
    for (double t : totals) losses.push_back(t / plan.micro_batches);
    opt.step();
    opt.zero_grad();
    run.losses.push_back(std::move(losses));
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
