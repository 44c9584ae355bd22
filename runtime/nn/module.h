// The runtime's own module tree: named children, named parameters, forward hooks (where
// fully_shard attaches) and an activation-checkpoint mode. Deliberately small: scenario models are
// built from these as plain functions of plain data.
#pragma once

#include "runtime/ac/checkpoint.h"

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace shardfuzz::nn {

class Module;

// What fully_shard installs on a module. The hooks sit outside the checkpoint region, as with
// torchtitan's order (checkpoint_wrapper first, then fully_shard), or inside it (HF's gradient
// checkpointing of an FSDP-wrapped layer; Module::set_checkpoint_wraps_hooks).
class ForwardHooks {
 public:
  virtual ~ForwardHooks() = default;
  virtual at::Tensor pre_forward(Module& module, const at::Tensor& input) = 0;
  virtual at::Tensor post_forward(Module& module, const at::Tensor& output) = 0;
};

class Module {
 public:
  explicit Module(std::string type) : type_(std::move(type)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Runs the hooks, then forward() (checkpointed when asked).
  at::Tensor operator()(const at::Tensor& input);
  virtual at::Tensor forward(const at::Tensor& input) = 0;

  const std::string& type() const { return type_; }
  // Dotted path from the root ("" for the root itself), set by register_module.
  const std::string& path() const { return path_; }
  std::string display_name() const { return path_.empty() ? "root" : path_; }

  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> child) {
    attach(name, child);
    return child;
  }
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }
  // The descendant at a dotted path relative to this module ("" is this module), or nullptr.
  Module* find(const std::string& path);
  // This module and every descendant, pre-order (as nn.Module.modules()).
  std::vector<Module*> modules();

  struct Parameter {
    std::string name;
    at::Tensor tensor;  // a leaf; fully_shard swaps in its unsharded parameter
  };
  at::Tensor& register_parameter(const std::string& name, at::Tensor value, bool requires_grad);
  at::Tensor& param(const std::string& name);
  std::vector<Parameter>& own_parameters() { return params_; }
  // (path-qualified name, parameter) for the whole subtree, pre-order.
  std::vector<std::pair<std::string, at::Tensor*>> named_parameters();
  void set_requires_grad(bool requires_grad);  // on the whole subtree (freezing)

  // Every call of this module runs under no_grad (a module used in forward but not in backward).
  void set_runs_without_grad(bool v) { without_grad_ = v; }
  bool runs_without_grad() const { return without_grad_; }

  ac::CheckpointMode checkpoint_mode() const { return checkpoint_; }
  void set_checkpoint_mode(ac::CheckpointMode mode) { checkpoint_ = mode; }
  // Reentrant checkpoint as upstream's use_reentrant=True: no backward through the region when its
  // input needs no grad (true), or as if the input needed grad (false; what HF's
  // enable_input_require_grads arranges). The profile's reentrant_checkpoint_needs_input_grad.
  void set_checkpoint_needs_input_grad(bool v) { checkpoint_needs_input_grad_ = v; }
  // Where the checkpoint region sits relative to the hooks: false (default) as torchtitan applies
  // checkpoint_wrapper before fully_shard, so the hooks run outside the region; true as HF's
  // gradient checkpointing calls checkpoint(layer.__call__), so the region re-runs the hooks.
  void set_checkpoint_wraps_hooks(bool v) { checkpoint_wraps_hooks_ = v; }

  // Fault injection: called with every output of this module's call (hooks included); it may throw
  // (an exception in forward) or attach a gradient hook that throws (one in backward).
  using CallFault = std::function<at::Tensor(Module&, const at::Tensor& output)>;
  void set_call_fault(CallFault fault) { call_fault_ = std::move(fault); }

  const std::shared_ptr<ForwardHooks>& hooks() const { return hooks_; }
  void set_hooks(std::shared_ptr<ForwardHooks> hooks) { hooks_ = std::move(hooks); }

 private:
  at::Tensor call(const at::Tensor& input);
  void attach(const std::string& name, std::shared_ptr<Module> child);
  void set_path(const std::string& path);

  std::string type_;
  std::string path_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<Parameter> params_;
  ac::CheckpointMode checkpoint_ = ac::CheckpointMode::None;
  bool without_grad_ = false;
  bool checkpoint_needs_input_grad_ = true;
  bool checkpoint_wraps_hooks_ = false;
  std::shared_ptr<ForwardHooks> hooks_;
  CallFault call_fault_;
};

}  // namespace shardfuzz::nn
