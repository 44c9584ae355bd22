// One training step on one rank: micro-batches of forwards, loss, backward (gradient
// accumulation with set_is_last_backward(false) until the last), the optimizer step on local
// shards, zero_grad, and an optional evaluation forward under no_grad — each phase a "train" event
// on the timeline, so per-step memory can be read off it.
#pragma once

#include "runtime/fsdp/rank_runtime.h"
#include "runtime/nn/module.h"
#include "runtime/train/optimizer.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>

namespace shardfuzz::train {

using LossFn = std::function<at::Tensor(const at::Tensor& output)>;

// The shape of a step. Each micro-batch's loss is the sum over its forwards, divided by
// micro_batches (so accumulated gradients are the mean over micro-batches).
struct StepPlan {
  int micro_batches = 1;
  int forwards_per_backward = 1;
  bool eval_forward = false;  // one more forward under no_grad after the optimizer step
};

// Which batch a forward sees: micro-batch `micro`, forward `forward` within it (the evaluation
// forward is micro == micro_batches).
using BatchFn = std::function<at::Tensor(int micro, int forward)>;

// Returns the loss (mean over micro-batches of each micro-batch's summed loss). `optimizer` may be
// null (forward/backward only).
double train_step(nn::Module& model, const StepPlan& plan, const BatchFn& batch, const LossFn& loss_fn,
                  ShardedOptimizer* optimizer, fsdp::RankRuntime& runtime, int step);

// The single-batch step the runtime's tests and the conformance traces use.
double train_step(nn::Module& model, const at::Tensor& input, const LossFn& loss_fn, ShardedOptimizer* optimizer,
                  fsdp::RankRuntime& runtime, int step);

// The deterministic input of `rank` at `step` ([tokens, dim]), the same for the sharded run and
// the reference. `stream` > 0 picks another batch of the same step (micro-batches, forwards).
at::Tensor make_input(uint64_t seed, int rank, int step, int64_t tokens, int64_t dim, bool requires_grad,
                      int stream = 0);
// Token ids in [0, vocab) ([tokens], int64) from the same seeding.
at::Tensor make_tokens(uint64_t seed, int rank, int step, int64_t tokens, int64_t vocab, int stream = 0);

}  // namespace shardfuzz::train
