// Optimizers on local shards (SGD, AdamW), and the unsharded reference's optimizer: LibTorch's own
// torch::optim::SGD / AdamW, so parity compares the runtime's update with an implementation it
// does not share (a defect in ParamSlot::update cannot hide by being on both sides).
#pragma once

#include "runtime/memory/ledger.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace shardfuzz::fsdp {
class ParamGroup;
class RankRuntime;
}  // namespace shardfuzz::fsdp

namespace shardfuzz::train {

struct OptimizerConfig {
  enum class Kind { Sgd, AdamW };
  Kind kind = Kind::Sgd;
  double lr = 0.05;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

// One tensor's optimizer state and its update (in place, under no-grad).
struct ParamSlot {
  at::Tensor param;  // data updated in place
  at::Tensor exp_avg, exp_avg_sq;
  memory::LedgerEntry state_entry;
  void update(const at::Tensor& grad, int64_t step, const OptimizerConfig& config,
              const std::shared_ptr<memory::Ledger>& ledger, const std::string& group);
};

// Steps every ShardedParam with a sharded gradient, on its padded local data (padding stays 0:
// its gradient is 0 and so is its decayed value).
class ShardedOptimizer {
 public:
  ShardedOptimizer(std::vector<fsdp::ParamGroup*> groups, OptimizerConfig config, fsdp::RankRuntime& runtime);
  void step();
  void zero_grad();

  // Its state (step count, AdamW moments per group and param; undefined where none yet), copied
  // and put back by a step's checkpoint (train/recovery.h). Restoring drops moments created since.
  struct State {
    int64_t step = 0;
    std::vector<std::vector<std::pair<at::Tensor, at::Tensor>>> moments;
  };
  State save() const;
  void restore(const State& state);

 private:
  std::vector<fsdp::ParamGroup*> groups_;
  OptimizerConfig config_;
  fsdp::RankRuntime& runtime_;
  std::vector<std::vector<ParamSlot>> slots_;  // per group, per param
  int64_t step_ = 0;
};

// The same configuration on a plain module's full parameters (the unsharded reference), stepped by
// LibTorch's torch::optim (torch.optim's semantics: decoupled weight decay, per-parameter
// bias-correction step counts).
class ReferenceOptimizer {
 public:
  ReferenceOptimizer(std::vector<at::Tensor*> params, OptimizerConfig config);
  ~ReferenceOptimizer();
  ReferenceOptimizer(const ReferenceOptimizer&) = delete;
  ReferenceOptimizer& operator=(const ReferenceOptimizer&) = delete;
  void step();
  void zero_grad();

 private:
  std::vector<at::Tensor*> params_;
  std::unique_ptr<torch::optim::Optimizer> impl_;
};

}  // namespace shardfuzz::train
