// The unsharded single-rank reference: the same model from the same seed, fed every rank's batches
// in turn with the loss averaged over ranks (what reduce-scatter AVG computes) and over
// micro-batches (gradient accumulation), then the same optimizer update on full tensors. Parity
// compares a sharded run against it. In float32 its gradients come from LibTorch's own backward
// formulas (the model's ops run as plain ATen ops under a LibTorchFormulas scope), not the
// runtime's, and its optimizer is always LibTorch's: a defect in either of the runtime's moves one
// side only.
#pragma once

#include "runtime/fsdp/options.h"
#include "runtime/nn/module.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/step.h"

#include <functional>
#include <memory>
#include <vector>

namespace shardfuzz::train {

// The batch rank `rank` sees at `step`, micro-batch `micro`, forward `forward` (as BatchFn).
using InputFn = std::function<at::Tensor(int rank, int step, int micro, int forward)>;

struct ReferenceRun {
  std::vector<std::vector<double>> losses;  // [step][rank]
};

// ranks_as_one_batch: the ranks' batches of a forward go through the model as one batch (their
// rows one after another) and each rank's loss is taken on its own rows: the same mathematics with
// world_size times fewer ops, for a model whose every output row depends on its own input row only
// (no attention). The gradient's sum over the ranks then happens inside each matmul, in another
// order: float32 rounding, not a change of what is computed.
ReferenceRun run_reference(nn::Module& model, int world_size, int steps, const StepPlan& plan, const InputFn& input,
                           const LossFn& loss_fn, const OptimizerConfig& optimizer, bool ranks_as_one_batch = false);
// Under mixed precision: what FSDP computes, unsharded. Each rank's forward and backward run on
// parameters cast to param_dtype (its floating inputs too); per micro-batch the ranks' gradients
// are cast to reduce_dtype, averaged in rank order, cast to each parameter's dtype and accumulated;
// the optimizer steps the stored (master) parameters. ranks_as_one_batch applies only without a
// param_dtype (the plain reference then runs); with one the ranks run one by one, as their casts do.
ReferenceRun run_reference(nn::Module& model, int world_size, int steps, const StepPlan& plan, const InputFn& input,
                           const LossFn& loss_fn, const OptimizerConfig& optimizer,
                           const fsdp::MixedPrecisionPolicy& mp, bool ranks_as_one_batch = false);
// One batch per rank and step.
ReferenceRun run_reference(nn::Module& model, int world_size, int steps,
                           const std::function<at::Tensor(int rank, int step)>& input, const LossFn& loss_fn,
                           const OptimizerConfig& optimizer);

}  // namespace shardfuzz::train
