// State-level hooks (docs/fsdp2-semantics.md sections 2-4 and 8).
#include "runtime/fsdp/state.h"

#include "runtime/fsdp/rank_runtime.h"
#include "runtime/nn/ops.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <stdexcept>

namespace shardfuzz::fsdp {

FSDPState::FSDPState(nn::Module& module, std::unique_ptr<ParamGroup> group, RankRuntime& runtime,
                     MixedPrecisionPolicy mp_policy)
    : module_(module),
      name_(module.display_name()),
      group_(std::move(group)),
      runtime_(runtime),
      mp_policy_(mp_policy) {}

FSDPState* fsdp_state_of(nn::Module& module) { return dynamic_cast<FSDPState*>(module.hooks().get()); }

std::vector<FSDPState*> FSDPState::states_of(const std::vector<nn::Module*>& modules, const std::string& what) {
  std::vector<FSDPState*> out;
  for (nn::Module* m : modules) {
    FSDPState* st = m ? fsdp_state_of(*m) : nullptr;
    if (!st)
      throw std::invalid_argument(what + ": module '" + (m ? m->display_name() : std::string("null")) +
                                  "' is not fully_shard-ed");
    out.push_back(st);
  }
  return out;
}

void FSDPState::set_modules_to_forward_prefetch(const std::vector<nn::Module*>& modules) {
  forward_prefetch_ = states_of(modules, "set_modules_to_forward_prefetch on '" + name_ + "'");
}

void FSDPState::set_modules_to_backward_prefetch(const std::vector<nn::Module*>& modules) {
  backward_prefetch_ = states_of(modules, "set_modules_to_backward_prefetch on '" + name_ + "'");
}

void FSDPState::set_is_last_backward(bool is_last) {
  if (!ctx_) throw std::logic_error("set_is_last_backward on '" + name_ + "': run a forward through the root first");
  ctx_->is_last_backward = is_last;
}

void FSDPState::set_reshard_after_backward(bool value) {
  if (group_) group_->set_reshard_after_backward(value);
}

// --- forward -----------------------------------------------------------------------------------

void FSDPState::lazy_init() {
  if (is_root_.has_value()) return;
  is_root_ = true;
  ctx_ = std::make_shared<StateContext>();
  for (nn::Module* m : module_.modules()) {
    FSDPState* st = fsdp_state_of(*m);
    if (!st) continue;
    if (st != this) {
      if (st->is_root_.has_value())
        throw std::logic_error("fully_shard: state of '" + st->name_ + "' was already lazily initialized; run forward "
                               "through the root '" + name_ + "' first");
      st->is_root_ = false;
      st->ctx_ = ctx_;
    }
    if (std::find(ctx_->all_states.begin(), ctx_->all_states.end(), st) == ctx_->all_states.end())
      ctx_->all_states.push_back(st);
  }
  for (FSDPState* st : ctx_->all_states)
    if (st->group_) st->group_->lazy_init(ctx_.get(), st == this);
}

void FSDPState::root_pre_forward() {
  lazy_init();
  // During AC recompute a nested state can become the iteration's forward root: harmless, it
  // only flushes the deferred all-gather at its own post_forward.
  if (ctx_->iter_forward_root != nullptr) return;
  ctx_->iter_forward_root = this;
}

at::Tensor FSDPState::pre_forward(nn::Module&, const at::Tensor& input) {
  // strict: a recompute that reaches a group which already finished this backward is a second use
  // of the module (several forwards per backward); it takes the forward path so that its hooks
  // register again and its second backward reshards it. Upstream takes the unshard-only path and
  // the params stay unsharded until the next forward.
  const bool second_use = group_ && group_->training_state() == TrainingState::PostBackward &&
                          runtime_.profile().recompute_of_finished_group_takes_forward_path;
  if (training_state_ == TrainingState::PreBackward && !second_use) {
    // Recompute after this module's pre-backward hook fired: unshard only, no forward path.
    if (group_ && !group_->is_unsharded()) {
      group_->unshard();
      group_->wait_for_unshard();
    }
    return input;
  }
  const bool first = training_state_ != TrainingState::Forward;
  training_state_ = TrainingState::Forward;
  if (first) root_pre_forward();
  // cast_forward_inputs: every fully_shard-ed module casts its floating inputs to param_dtype, with
  // or without parameters of its own. (The recompute path above returns the input uncast, as
  // upstream's _pre_forward does in PRE_BACKWARD.)
  const at::Tensor cast = cast_forward_input(input);
  at::Tensor x = group_ ? group_->pre_forward(cast) : cast;
  if (first)
    for (FSDPState* st : forward_prefetch_)
      if (st->group_) ParamGroup::prefetch_unshard(*st->group_, Pass::Forward, "(forward state)");
  return x;
}

at::Tensor FSDPState::cast_forward_input(const at::Tensor& input) const {
  if (!mp_policy_.cast_forward_inputs || !mp_policy_.param_dtype || !input.defined() || !input.is_floating_point())
    return input;
  return nn::ops::to_dtype(input, *mp_policy_.param_dtype);
}

at::Tensor FSDPState::post_forward(nn::Module&, const at::Tensor& output) {
  if (training_state_ == TrainingState::PreBackward) return output;
  if (group_) group_->post_forward();
  at::Tensor out = register_pre_backward_hook(output);
  training_state_ = TrainingState::Idle;
  if (ctx_ && ctx_->iter_forward_root == this) {
    ctx_->all_gather_state.reset();
    ctx_->iter_forward_root = nullptr;
  }
  return out;
}

at::Tensor FSDPState::register_pre_backward_hook(const at::Tensor& output) {
  if (!torch::autograd::GradMode::is_enabled() || !output.requires_grad()) return output;
  if (group_) group_->set_expects_backward(true);
  std::weak_ptr<FSDPState> weak = weak_from_this();
  at::Tensor out = output;
  out.register_hook([weak](const at::Tensor& grad) {
    if (auto self = weak.lock()) self->pre_backward();
    return grad;
  });
  return out;
}

// --- backward ----------------------------------------------------------------------------------

void FSDPState::pre_backward() {
  training_state_ = TrainingState::PreBackward;
  register_root_post_backward_final_callback();
  if (group_) group_->pre_backward(/*default_prefetch=*/backward_prefetch_.empty());
  // Only a NON-empty list disables the implicit path: [] behaves like never calling it.
  for (FSDPState* st : backward_prefetch_)
    if (st->group_) ParamGroup::prefetch_unshard(*st->group_, Pass::Backward, "(forward state)");
}

void FSDPState::register_root_post_backward_final_callback() {
  if (!ctx_ || ctx_->post_backward_final_callback_queued) return;
  ctx_->post_backward_final_callback_queued = true;
  std::weak_ptr<FSDPState> weak = weak_from_this();
  torch::autograd::Engine::get_default_engine().queue_callback([weak] {
    if (auto self = weak.lock()) self->root_post_backward_final_callback();
  });
}

void FSDPState::root_post_backward_final_callback() {
  StateContext& ctx = *ctx_;
  ctx.iter_forward_root = nullptr;
  // Upstream resets the scheduling state (unconsumed all-gathers, post_forward_order) only after
  // the last backward; strict resets it after every backward, since the next forward rebuilds it.
  // Gradients and reduce-scatter keep-alives accumulate across micro-batches either way.
  const bool finalize_schedule =
      ctx.is_last_backward || !runtime_.profile().stale_state_survives_non_last_backward;
  for (FSDPState* st : ctx.all_states) {
    if (ParamGroup* g = st->group_.get()) {
      // Catch-all: groups whose post-backward node never ran (inputs without grad, unused).
      if (g->training_state() != TrainingState::PostBackward) g->post_backward_at_end_of_pass();
      g->end_backward_pass();
    }
    st->training_state_ = TrainingState::Idle;
    if (finalize_schedule && st->group_) st->group_->finalize_backward();
  }
  if (finalize_schedule) ctx.post_forward_order.clear();
  if (ctx.is_last_backward) ctx.reduce_scatter_states.clear();
  if (finalize_schedule) ctx.all_reduce_state.reset();
  ctx.post_backward_final_callback_queued = false;
}

// --- recovery ----------------------------------------------------------------------------------

void FSDPState::reset_after_fault() {
  if (!ctx_) {
    training_state_ = TrainingState::Idle;
    if (group_) group_->reset_after_fault();
    return;
  }
  StateContext& ctx = *ctx_;
  ctx.iter_forward_root = nullptr;
  ctx.post_backward_final_callback_queued = false;
  ctx.is_last_backward = true;
  ctx.post_forward_order.clear();
  ctx.all_gather_state.reset();
  ctx.reduce_scatter_states.clear();
  ctx.all_reduce_state.reset();
  for (FSDPState* st : ctx.all_states) {
    st->training_state_ = TrainingState::Idle;
    if (st->group_) st->group_->reset_after_fault();
  }
}

void reset_after_fault(nn::Module& model) {
  std::vector<FSDPState*> done;
  for (nn::Module* m : model.modules()) {
    FSDPState* st = fsdp_state_of(*m);
    if (!st || std::find(done.begin(), done.end(), st) != done.end()) continue;
    st->reset_after_fault();
    if (const auto& ctx = st->context())
      done.insert(done.end(), ctx->all_states.begin(), ctx->all_states.end());
    else
      done.push_back(st);
  }
}

}  // namespace shardfuzz::fsdp
