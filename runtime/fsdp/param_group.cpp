// The FSDP2 group state machine (docs/fsdp2-semantics.md sections 3-10), recording one timeline event
// per transition exactly where upstream's trace recorder does.
#include "runtime/fsdp/param_group.h"

#include "runtime/autograd/lambda_node.h"
#include "runtime/compat/torch_compat.h"
#include "runtime/fsdp/rank_runtime.h"
#include "runtime/fsdp/state_context.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <mutex>
#include <stdexcept>

namespace shardfuzz::fsdp {

ParamGroup::ParamGroup(std::string name, std::vector<ShardedParam> params, GroupMesh mesh, FullyShardOptions options,
                       RankRuntime& runtime)
    : name_(std::move(name)),
      params_(std::move(params)),
      mesh_(std::move(mesh)),
      options_(options),
      runtime_(runtime) {
  runtime_.register_group(this, name_, [this](memory::TimelineEvent& e) { snapshot_into(e); });
}

void ParamGroup::snapshot_into(memory::TimelineEvent& e) const {
  if (has_pending_all_gather()) {
    e.pending_all_gather.push_back(name_);
    e.pending_all_gather_bytes[name_] = pending_all_gather_bytes();
  }
  if (is_unsharded()) e.unsharded.push_back(name_);
  e.unsharded_grad_bytes += unsharded_grad_bytes();
  if (training_state_ == TrainingState::PostBackward) e.finished_backward.push_back(name_);
}

namespace {

// What the injected group_reference_cycle defect keeps alive: the parameters of every group torn
// down under it, as an unreachable cycle would (never freed; the harness's teardown property must
// see their bytes).
void keep_alive_as_cycle(std::vector<ShardedParam> params) {
  static std::mutex mu;
  static auto* leaked = new std::vector<std::vector<ShardedParam>>();
  std::lock_guard<std::mutex> lock(mu);
  leaked->push_back(std::move(params));
}

}  // namespace

ParamGroup::~ParamGroup() {
  runtime_.unregister_group(this);
  if (runtime_.profile().group_reference_cycle) keep_alive_as_cycle(std::move(params_));
}

bool ParamGroup::reshard_after_forward() const {
  switch (options_.reshard_after_forward.kind) {
    case ReshardAfterForward::Kind::Auto: return !is_root_;
    case ReshardAfterForward::Kind::True: return !(is_root_ && runtime_.profile().root_never_reshards_after_forward);
    case ReshardAfterForward::Kind::False: return false;
    // Before PR #155319 lazy init set the root's post_forward_mesh_info to None whatever was passed,
    // so an integer is clamped as True is.
    case ReshardAfterForward::Kind::Int:
      return options_.reshard_after_forward.n != 1 && !(is_root_ && runtime_.profile().root_never_reshards_after_forward);
  }
  return true;
}

int64_t ParamGroup::unsharded_grad_bytes() const {
  int64_t bytes = 0;
  // The implementation's grad, not Tensor::grad(): every timeline event reads it for every
  // parameter, and the latter also asks the autograd hooks whether the parameter is a leaf (for
  // a warning about non-leaf tensors, which an unsharded parameter never is).
  for (const auto& p : params_) {
    const at::Tensor& g = p.unsharded_param().unsafeGetTensorImpl()->grad();
    if (g.defined()) bytes += static_cast<int64_t>(g.nbytes());
  }
  return bytes;
}

bool ParamGroup::uses_post_forward_mesh() const { return mesh_.post_forward != nullptr; }

void ParamGroup::lazy_init(StateContext* ctx, bool is_root) {
  ctx_ = ctx;
  is_root_ = is_root;
}

at::Tensor ParamGroup::persistent_buffer() {
  if (!runtime_.profile().world1_persistent_all_gather_buffer || mesh_.shard->size() != 1) return {};
  if (!persistent_all_gather_.defined()) {
    int64_t row = 0;
    for (const auto& p : params_) row += p.padded_sharded_numel();
    persistent_all_gather_ =
        at::empty({row}, params_.front().sharded_data().options().dtype(params_.front().param_dtype()));
    persistent_entry_ = runtime_.ledger().add(name_, memory::BufferKind::PersistentAllGather,
                                              row * persistent_all_gather_.element_size());
  }
  return persistent_all_gather_;
}

// --- forward -----------------------------------------------------------------------------------

at::Tensor ParamGroup::pre_forward(const at::Tensor& input) {
  runtime_.record(memory::Event::PreForward, name_, {{"in_backward", compat::in_backward()}});
  training_state_ = TrainingState::Forward;
  expects_backward_ = false;
  unshard();
  wait_for_unshard();
  return register_post_backward_hook(input);
}

void ParamGroup::post_forward() {
  // torch >= 2.10 skips both inside the autograd engine (AC recompute): PR #164009's is_bw().
  if (runtime_.profile().post_forward_reshards_during_backward || !compat::in_backward()) {
    reshard();
    record_post_forward();
  }
  training_state_ = TrainingState::Idle;
  runtime_.record(memory::Event::PostForward, name_, {{"in_backward", compat::in_backward()}});
}

void ParamGroup::record_post_forward() {
  if (torch::autograd::GradMode::is_enabled()) ++forwards_with_grad_this_pass_;
  const int index = static_cast<int>(ctx_->post_forward_order.size());
  ctx_->post_forward_order.push_back(this);
  post_forward_indices_.push_back(index);
}

at::Tensor ParamGroup::register_post_backward_hook(const at::Tensor& input) {
  // One node over the inputs that require grad; it runs after this module's whole backward.
  if (!torch::autograd::GradMode::is_enabled() || !input.requires_grad()) return input;
  at::Tensor alias;
  {
    torch::autograd::AutoGradMode off(false);
    alias = input.detach();
  }
  return autograd::record_op("RegisterPostBackward(" + name_ + ")", {input}, alias,
                             [this](const at::Tensor& grad) -> autograd::tensor_list {
                               post_backward();
                               return {grad};
                             });
}

// --- backward ----------------------------------------------------------------------------------

void ParamGroup::pre_backward(bool default_prefetch) {
  runtime_.record(memory::Event::PreBackwardBegin, name_);
  if (training_state_ != TrainingState::PreBackward) {  // the first output's hook wins
    training_state_ = TrainingState::PreBackward;
    unshard();  // a no-op when prefetched
    wait_for_unshard();
    if (default_prefetch) backward_prefetch();
  }
  runtime_.record(memory::Event::PreBackwardEnd, name_);
}

void ParamGroup::backward_prefetch() {
  // Implicit prefetch: assumes the reverse of post_forward_order is the pre-backward order and
  // never asks whether the target already finished backward (upstream has no such check).
  if (training_state_ != TrainingState::PreBackward) return;
  if (post_forward_indices_.empty()) return;
  const int current = post_forward_indices_.back();
  post_forward_indices_.pop_back();
  const int target = current - 1;
  if (target < 0 || target >= static_cast<int>(ctx_->post_forward_order.size())) return;
  prefetch_unshard(*ctx_->post_forward_order[static_cast<std::size_t>(target)], Pass::Backward, name_);
}

void ParamGroup::prefetch_unshard(ParamGroup& target, Pass pass, const std::string& issuer) {
  nlohmann::json detail = {{"target", target.name_}, {"pass", to_string(pass)}};
  const semantics::Profile& profile = target.runtime_.profile();
  const bool finished = target.finished_backward_this_pass();
  const bool pointless = pass == Pass::Backward && (finished || !target.expects_backward_);
  if (profile.prefetch_skips_groups_without_pending_backward && pointless) {
    detail["skipped"] = finished ? "target already finished backward" : "target will not run backward";
    target.runtime_.record(memory::Event::Prefetch, issuer, std::move(detail));
    return;
  }
  target.runtime_.record(memory::Event::Prefetch, issuer, std::move(detail));
  const TrainingState saved = target.training_state_;
  target.training_state_ = pass == Pass::Backward ? TrainingState::PreBackward : TrainingState::Forward;
  try {
    target.unshard();
  } catch (...) {
    target.training_state_ = saved;
    throw;
  }
  target.training_state_ = saved;
}

void ParamGroup::post_backward() {
  training_state_ = TrainingState::PostBackward;
  ++post_backwards_this_pass_;
  if (options_.reshard_after_backward) reshard();
  // Drain retained reduce-scatter inputs down to K before reducing (upstream: the next group's
  // reduce waits on and drops the oldest).
  while (ctx_ && !ctx_->reduce_scatter_states.empty() &&
         ctx_->reduce_scatter_states.size() >= ctx_->reduce_scatter_keep)
    ctx_->reduce_scatter_states.pop_front();
  // HSDP's kept reduce output: the fixed schedule (PR #179443) drops the previous group's here, so
  // one lives at a time; before it each group held its own until finalize_backward.
  if (ctx_ && !runtime_.profile().all_reduce_state_per_group) ctx_->all_reduce_state.reset();
  all_reduce_state_.reset();
  ReduceResult reduced = reduce_scatter_grads(params_, mesh_.shard.get(), mesh_.replicate.get(), runtime_.ledger_ptr(),
                                              name_, options_.mp_policy.reduce_dtype, options_.gradient_divide_factor,
                                              runtime_.check_finite_grads());
  // The first non-finite gradient, where it appeared: in this rank's contribution, or arriving
  // through the reduce-scatter from a peer's.
  if (!reduced.nonfinite_before.empty())
    runtime_.record(memory::Event::NonfiniteGrad, name_,
                    {{"param", reduced.nonfinite_before}, {"where", "before_reduce_scatter"}});
  else if (!reduced.nonfinite_after.empty())
    runtime_.record(memory::Event::NonfiniteGrad, name_,
                    {{"param", reduced.nonfinite_after}, {"where", "after_reduce_scatter"}});
  if (reduced.reduce_scatter && ctx_) ctx_->reduce_scatter_states.push_back(std::move(reduced.reduce_scatter));
  if (reduced.all_reduce) {
    if (runtime_.profile().all_reduce_state_per_group || !ctx_)
      all_reduce_state_ = std::move(reduced.all_reduce);
    else
      ctx_->all_reduce_state = std::move(reduced.all_reduce);
  }
  if (runtime_.profile().free_unconsumed_all_gather_at_post_backward) drop_unconsumed_all_gathers();
  runtime_.record(memory::Event::PostBackward, name_);
}

void ParamGroup::drop_unconsumed_all_gathers() {
  for (ParamGroup* g : runtime_.groups()) {
    if (!g->all_gather_result_) continue;
    if (g->finished_backward_this_pass() || !g->expects_backward_) g->all_gather_result_.reset();
  }
}

void ParamGroup::finalize_backward() {
  const bool dropped = all_gather_result_ != nullptr;
  all_gather_result_.reset();  // a prefetch nobody waited for: freed only now upstream
  all_reduce_state_.reset();
  post_forward_indices_.clear();
  runtime_.record(memory::Event::FinalizeBackward, name_, {{"dropped_pending_all_gather", dropped}});
}

void ParamGroup::reset_after_fault() {
  nlohmann::json detail = {{"sharded_state", to_string(sharded_state_)},
                           {"training_state", to_string(training_state_)},
                           {"dropped_pending_all_gather", all_gather_result_ != nullptr}};
  all_gather_result_.reset();
  all_reduce_state_.reset();
  // Every param, whatever the state says: a copy-out that failed half-way has allocated unsharded
  // params while the group is still SHARDED.
  for (auto& p : params_) {
    p.drop_unsharded_grad();
    p.free_unsharded();
  }
  post_forward_slices_.clear();
  post_forward_entry_.reset();
  sharded_state_ = ShardedState::Sharded;
  post_forward_indices_.clear();
  expects_backward_ = false;
  end_backward_pass();
  runtime_.record(memory::Event::ResetAfterFault, name_, std::move(detail));
}

// --- unshard / reshard -------------------------------------------------------------------------

void ParamGroup::unshard() {
  if (all_gather_result_) return;
  if (sharded_state_ == ShardedState::Unsharded) return;
  std::vector<at::Tensor> inputs;
  comm::Communicator* comm = mesh_.shard.get();
  if (sharded_state_ == ShardedState::ShardedPostForward) {
    inputs = post_forward_slices_;
    comm = mesh_.post_forward.get();
  } else {
    for (const auto& p : params_) inputs.push_back(p.sharded_data());
  }
  const at::Tensor persistent = sharded_state_ == ShardedState::Sharded ? persistent_buffer() : at::Tensor();
  all_gather_result_ =
      all_gather_flat(inputs, params_.front().param_dtype(), comm, persistent, runtime_.ledger_ptr(), name_);
  // The state the all-gather was issued in (FORWARD or PRE_BACKWARD; a prefetch's pass), as
  // upstream's tests record each unshard that is not a no-op.
  runtime_.record(memory::Event::AllGatherIssued, name_, {{"state", to_string(training_state_)}});
}

void ParamGroup::wait_for_unshard() {
  if (!all_gather_result_) return;
  const bool implicit_forward = training_state_ == TrainingState::Forward;
  if (implicit_forward && ctx_) ctx_->all_gather_state.reset();  // free the previous group's output
  const bool from_post_forward = sharded_state_ == ShardedState::ShardedPostForward;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    at::Tensor piece = gathered_piece(*all_gather_result_, i);
    if (from_post_forward)
      params_[i].copy_out_post_forward(piece);
    else
      params_[i].copy_out(piece);
  }
  post_forward_slices_.clear();
  post_forward_entry_.reset();
  sharded_state_ = ShardedState::Unsharded;
  const int size = static_cast<int>(all_gather_result_->output.size(0));
  if (implicit_forward && size > 1 && ctx_) {
    // Deferred free lets this copy-out overlap the next all-gather upstream.
    all_gather_result_->entry.retag(memory::BufferKind::DeferredAllGather);
    ctx_->all_gather_state = std::move(all_gather_result_);
  }
  all_gather_result_.reset();
}

void ParamGroup::reshard() {
  // The state it ran in, and whether it kept the parameters (a FORWARD reshard without
  // reshard_after_forward: upstream's tests record no event for that no-op).
  nlohmann::json detail = {{"state", to_string(training_state_)}};
  if (training_state_ == TrainingState::Forward) {
    if (!reshard_after_forward()) {
      detail["kept"] = true;
      runtime_.record(memory::Event::Reshard, name_, std::move(detail));
      return;
    }
    if (uses_post_forward_mesh()) {
      to_sharded_post_forward();
      runtime_.record(memory::Event::Reshard, name_, std::move(detail));
      return;
    }
  }
  to_sharded();
  runtime_.record(memory::Event::Reshard, name_, std::move(detail));
}

void ParamGroup::to_sharded() {
  if (sharded_state_ == ShardedState::Sharded) return;
  for (auto& p : params_) p.free_unsharded();
  post_forward_slices_.clear();
  post_forward_entry_.reset();
  sharded_state_ = ShardedState::Sharded;
}

void ParamGroup::to_sharded_post_forward() {
  if (sharded_state_ != ShardedState::Unsharded) return;
  const int n = mesh_.post_forward->size();
  const int j = mesh_.post_forward->rank();
  int64_t bytes = 0;
  post_forward_slices_.clear();
  for (auto& p : params_) {
    post_forward_slices_.push_back(p.post_forward_slice(j, n));
    bytes += post_forward_slices_.back().numel() * post_forward_slices_.back().element_size();
    p.free_unsharded();
  }
  post_forward_entry_ = runtime_.ledger().add(name_, memory::BufferKind::ShardedPostForward, bytes);
  sharded_state_ = ShardedState::ShardedPostForward;
}

}  // namespace shardfuzz::fsdp
