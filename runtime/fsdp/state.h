// FSDPState: what one fully_shard call installs on a module. It owns the module's ParamGroup (at
// most one: per-parameter meshes are not modelled), runs the state-level hooks (root lazy init,
// forward prefetch, the pre-backward hook on outputs, explicit backward prefetch) and, on the
// root, the final callback at the end of backward.
#pragma once

#include "runtime/fsdp/options.h"
#include "runtime/fsdp/param_group.h"
#include "runtime/fsdp/state_context.h"
#include "runtime/nn/module.h"

#include <memory>
#include <optional>
#include <vector>

namespace shardfuzz::fsdp {

class RankRuntime;

class FSDPState final : public nn::ForwardHooks, public std::enable_shared_from_this<FSDPState> {
 public:
  FSDPState(nn::Module& module, std::unique_ptr<ParamGroup> group, RankRuntime& runtime,
            MixedPrecisionPolicy mp_policy = {});

  nn::Module& module() { return module_; }
  const std::string& name() const { return name_; }
  ParamGroup* group() { return group_.get(); }
  bool is_root() const { return is_root_.value_or(false); }
  TrainingState training_state() const { return training_state_; }
  const std::shared_ptr<StateContext>& context() const { return ctx_; }

  // FSDPModule's API.
  void set_modules_to_forward_prefetch(const std::vector<nn::Module*>& modules);
  void set_modules_to_backward_prefetch(const std::vector<nn::Module*>& modules);
  void set_is_last_backward(bool is_last);  // on the root's context
  void set_reshard_after_backward(bool value);
  // Recovery, on a root: forgets the failed step's schedule (forward root, post_forward order,
  // deferred all-gather, reduce-scatter keep-alives, the queued final callback, which autograd
  // drops with a failed backward) and resets every group of its tree (ParamGroup::reset_after_fault).
  void reset_after_fault();

  // nn::ForwardHooks
  at::Tensor pre_forward(nn::Module& module, const at::Tensor& input) override;
  at::Tensor post_forward(nn::Module& module, const at::Tensor& output) override;

 private:
  void lazy_init();
  void root_pre_forward();
  void pre_backward();
  void register_root_post_backward_final_callback();
  void root_post_backward_final_callback();
  at::Tensor register_pre_backward_hook(const at::Tensor& output);
  at::Tensor cast_forward_input(const at::Tensor& input) const;
  static std::vector<FSDPState*> states_of(const std::vector<nn::Module*>& modules, const std::string& what);

  nn::Module& module_;
  std::string name_;
  std::unique_ptr<ParamGroup> group_;
  RankRuntime& runtime_;
  MixedPrecisionPolicy mp_policy_;
  std::shared_ptr<StateContext> ctx_;
  std::optional<bool> is_root_;
  TrainingState training_state_ = TrainingState::Idle;
  std::vector<FSDPState*> forward_prefetch_;
  std::vector<FSDPState*> backward_prefetch_;
};

// The FSDP state fully_shard installed on `module`, or nullptr.
FSDPState* fsdp_state_of(nn::Module& module);
// Recovery of a model after a failed step: resets every FSDP root in `model`'s tree (and, if
// no forward ever made it a root, each group directly).
void reset_after_fault(nn::Module& model);

}  // namespace shardfuzz::fsdp
