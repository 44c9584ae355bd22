// One training step on one rank: forward, loss, backward, optimizer step on local shards,
// zero_grad — each phase a "train" event on the timeline, so per-step memory can be read off it.
#pragma once

#include "runtime/fsdp/rank_runtime.h"
#include "runtime/nn/module.h"
#include "runtime/train/optimizer.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>

namespace shardfuzz::train {

using LossFn = std::function<at::Tensor(const at::Tensor& output)>;

// Returns the loss. `optimizer` may be null (forward/backward only).
double train_step(nn::Module& model, const at::Tensor& input, const LossFn& loss_fn, ShardedOptimizer* optimizer,
                  fsdp::RankRuntime& runtime, int step);

// The deterministic input of `rank` at `step` ([tokens, dim]), the same for the sharded run and
// the reference.
at::Tensor make_input(uint64_t seed, int rank, int step, int64_t tokens, int64_t dim, bool requires_grad);

}  // namespace shardfuzz::train
