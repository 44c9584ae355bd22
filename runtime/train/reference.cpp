// Gradient accumulation over the ranks' batches, scaled by 1/world.
#include "runtime/train/reference.h"

#include "runtime/nn/ops.h"

#include <torch/csrc/autograd/autograd.h>

namespace shardfuzz::train {

ReferenceRun run_reference(nn::Module& model, int world_size, int steps, const InputFn& input, const LossFn& loss_fn,
                           const OptimizerConfig& optimizer) {
  std::vector<at::Tensor*> params;
  for (auto& [name, p] : model.named_parameters()) params.push_back(p);
  ReferenceOptimizer opt(params, optimizer);
  ReferenceRun run;
  for (int s = 0; s < steps; ++s) {
    std::vector<double> losses;
    for (int r = 0; r < world_size; ++r) {
      at::Tensor loss = loss_fn(model(input(r, s)));
      losses.push_back(loss.item<double>());
      torch::autograd::backward({nn::ops::scale(loss, 1.0 / world_size)});
    }
    opt.step();
    opt.zero_grad();
    run.losses.push_back(std::move(losses));
  }
  return run;
}

}  // namespace shardfuzz::train
