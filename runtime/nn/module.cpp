// Module tree bookkeeping and the call path (hooks around a possibly checkpointed forward).
#include "runtime/nn/module.h"

#include <torch/csrc/autograd/grad_mode.h>

#include <stdexcept>

namespace shardfuzz::nn {

at::Tensor Module::operator()(const at::Tensor& input) {
  at::Tensor out;
  if (without_grad_) {
    // The whole call, hooks included, as `with torch.no_grad(): module(x)` at the call site.
    torch::autograd::AutoGradMode off(false);
    out = call(input);
  } else {
    out = call(input);
  }
  return call_fault_ ? call_fault_(*this, out) : out;
}

at::Tensor Module::call(const at::Tensor& input) {
  // Keep ourselves and the hooks alive for the whole call, even if a hook swaps them.
  std::shared_ptr<ForwardHooks> hooks = hooks_;
  // A checkpoint region keeps this function for its recompute, possibly beyond the model's and
  // the runtime's lifetime (a graph a failed run never back-propagated): it must not own the hooks.
  std::weak_ptr<ForwardHooks> weak_hooks = hooks;
  auto hooked = [this, weak_hooks](const at::Tensor& in) {
    std::shared_ptr<ForwardHooks> h = weak_hooks.lock();
    at::Tensor x = h ? h->pre_forward(*this, in) : in;
    at::Tensor out = forward(x);
    return h ? h->post_forward(*this, out) : out;
  };
  if (checkpoint_ == ac::CheckpointMode::None) return hooked(input);
  if (checkpoint_wraps_hooks_)  // HF gradient checkpointing: the hooked call is the region
    return ac::checkpoint(checkpoint_, hooked, input, display_name(), checkpoint_needs_input_grad_);
  // torchtitan: checkpoint_wrapper inside, fully_shard's hooks outside the region.
  at::Tensor x = hooks ? hooks->pre_forward(*this, input) : input;
  at::Tensor out = ac::checkpoint(checkpoint_, [this](const at::Tensor& in) { return forward(in); }, x,
                                  display_name(), checkpoint_needs_input_grad_);
  return hooks ? hooks->post_forward(*this, out) : out;
}

Module* Module::find(const std::string& path) {
  Module* m = this;
  std::size_t start = 0;
  while (m && start < path.size()) {
    const std::size_t dot = path.find('.', start);
    const std::string name = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    Module* next = nullptr;
    for (auto& [child_name, child] : m->children_)
      if (child_name == name) next = child.get();
    m = next;
    start = dot == std::string::npos ? path.size() : dot + 1;
  }
  return m;
}

std::vector<Module*> Module::modules() {
  std::vector<Module*> out{this};
  for (auto& [name, child] : children_) {
    auto sub = child->modules();
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

at::Tensor& Module::register_parameter(const std::string& name, at::Tensor value, bool requires_grad) {
  for (const auto& p : params_)
    if (p.name == name) throw std::invalid_argument("module '" + display_name() + "': parameter '" + name + "' registered twice");
  if (value.dim() == 0)
    throw std::invalid_argument("module '" + display_name() + "': parameter '" + name + "' is a scalar (FSDP cannot shard it)");
  value = value.detach();
  value.set_requires_grad(requires_grad);
  params_.push_back({name, std::move(value)});
  return params_.back().tensor;
}

at::Tensor& Module::param(const std::string& name) {
  for (auto& p : params_)
    if (p.name == name) return p.tensor;
  throw std::out_of_range("module '" + display_name() + "' has no parameter '" + name + "'");
}

std::vector<std::pair<std::string, at::Tensor*>> Module::named_parameters() {
  std::vector<std::pair<std::string, at::Tensor*>> out;
  for (Module* m : modules())
    for (auto& p : m->params_) out.emplace_back(m->path_.empty() ? p.name : m->path_ + "." + p.name, &p.tensor);
  return out;
}

void Module::set_requires_grad(bool requires_grad) {
  for (Module* m : modules())
    for (auto& p : m->params_) p.tensor.set_requires_grad(requires_grad);
}

void Module::attach(const std::string& name, std::shared_ptr<Module> child) {
  if (!child) throw std::invalid_argument("module '" + display_name() + "': child '" + name + "' is null");
  for (const auto& c : children_)
    if (c.first == name) throw std::invalid_argument("module '" + display_name() + "': child '" + name + "' registered twice");
  child->set_path(path_.empty() ? name : path_ + "." + name);
  children_.emplace_back(name, std::move(child));
}

void Module::set_path(const std::string& path) {
  path_ = path;
  for (auto& [name, child] : children_) child->set_path(path_ + "." + name);
}

}  // namespace shardfuzz::nn
