// ParamGroup (upstream FSDPParamGroup): the FSDP2 state machine of one group of parameters. Each
// transition is a method named after the event it records in the timeline — pre_forward,
// post_forward, pre_backward (begin/end), post_backward, unshard (all_gather_issued), reshard,
// prefetch, finalize_backward — so a trace reads as a call log of this class.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/fsdp/collectives.h"
#include "runtime/fsdp/options.h"
#include "runtime/fsdp/sharded_param.h"
#include "runtime/fsdp/training_state.h"
#include "runtime/memory/timeline.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace shardfuzz::fsdp {

class RankRuntime;
struct StateContext;

struct GroupMesh {
  std::shared_ptr<comm::Communicator> shard;      // FSDP dim
  std::shared_ptr<comm::Communicator> replicate;  // HSDP replicate dim, or null
  std::shared_ptr<comm::Communicator> post_forward;  // int reshard_after_forward: the N-rank group
};

class ParamGroup {
 public:
  ParamGroup(std::string name, std::vector<ShardedParam> params, GroupMesh mesh, FullyShardOptions options,
             RankRuntime& runtime);
  ~ParamGroup();
  ParamGroup(const ParamGroup&) = delete;
  ParamGroup& operator=(const ParamGroup&) = delete;

  const std::string& name() const { return name_; }
  std::vector<ShardedParam>& params() { return params_; }
  const GroupMesh& mesh() const { return mesh_; }
  TrainingState training_state() const { return training_state_; }
  void set_training_state(TrainingState s) { training_state_ = s; }
  ShardedState sharded_state() const { return sharded_state_; }
  bool is_unsharded() const { return sharded_state_ == ShardedState::Unsharded; }
  bool has_pending_all_gather() const { return all_gather_result_ != nullptr; }
  int64_t unsharded_grad_bytes() const;
  int64_t pending_all_gather_bytes() const { return all_gather_result_ ? all_gather_result_->entry.bytes() : 0; }
  // This group's part of a timeline event (what it registered with its RankRuntime).
  void snapshot_into(memory::TimelineEvent& e) const;
  const std::vector<int>& post_forward_indices() const { return post_forward_indices_; }
  // Whether the last forward registered a pre-backward hook (strict uses it).
  bool expects_backward() const { return expects_backward_; }
  void set_expects_backward(bool v) { expects_backward_ = v; }
  // Whether every use this pass has had its backward: PostBackward, and as many post_backwards as
  // forwards with grad (a module run forward twice before one backward has two), or the root's
  // final callback ran it (no backward comes after that). Strict's prefetch guard and its drop of
  // unconsumed all-gathers ask this, not the state alone.
  bool finished_backward_this_pass() const {
    return training_state_ == TrainingState::PostBackward &&
           (pass_over_ || post_backwards_this_pass_ >= forwards_with_grad_this_pass_);
  }
  // The root's final callback's catch-all, for a group whose post-backward node never ran (its
  // gradient never came: inputs without grad, a no_grad module after it, unused): its last
  // post_backward of the pass, however many forwards it had.
  void post_backward_at_end_of_pass() {
    pass_over_ = true;
    post_backward();
  }
  // The root's final callback: the next backward is a new pass.
  void end_backward_pass() {
    training_state_ = TrainingState::Idle;
    forwards_with_grad_this_pass_ = 0;
    post_backwards_this_pass_ = 0;
    pass_over_ = false;
  }
  bool reshard_after_forward() const;  // resolved (root's Auto is false)
  void set_reshard_after_backward(bool v) { options_.reshard_after_backward = v; }

  void lazy_init(StateContext* ctx, bool is_root);

  // Transitions.
  at::Tensor pre_forward(const at::Tensor& input);
  void post_forward();
  void pre_backward(bool default_prefetch);
  void post_backward();
  void unshard();
  void wait_for_unshard();
  void reshard();
  void finalize_backward();
  // After a failed step (an exception or OOM anywhere in it, on this rank or a peer): back to
  // SHARDED and IDLE with no pending all-gather, no reduce output, no unreduced gradient and no
  // schedule of the failed pass. What lives as long as the module stays: the sharded gradient
  // (the step's checkpoint restores it) and the world-1 persistent all-gather buffer.
  void reset_after_fault();
  // Unshards `target` as if it were in `pass`; `issuer` names who asked (a group, or
  // "(forward state)" for state-level explicit prefetch, as upstream traces label it).
  static void prefetch_unshard(ParamGroup& target, Pass pass, const std::string& issuer);

 private:
  void backward_prefetch();
  void record_post_forward();
  at::Tensor register_post_backward_hook(const at::Tensor& input);
  void to_sharded();
  void to_sharded_post_forward();
  void drop_unconsumed_all_gathers();
  bool uses_post_forward_mesh() const;
  at::Tensor persistent_buffer();

  std::string name_;
  std::vector<ShardedParam> params_;
  GroupMesh mesh_;
  FullyShardOptions options_;
  RankRuntime& runtime_;
  StateContext* ctx_ = nullptr;
  bool is_root_ = false;

  TrainingState training_state_ = TrainingState::Idle;
  ShardedState sharded_state_ = ShardedState::Sharded;
  std::unique_ptr<AllGatherResult> all_gather_result_;
  std::unique_ptr<AllReduceState> all_reduce_state_;  // all_reduce_state_per_group only
  std::vector<int> post_forward_indices_;
  bool expects_backward_ = false;
  int forwards_with_grad_this_pass_ = 0;  // post_forwards recorded with grad enabled
  int post_backwards_this_pass_ = 0;
  bool pass_over_ = false;  // post_backward_at_end_of_pass ran
  std::vector<at::Tensor> post_forward_slices_;  // SHARDED_POST_FORWARD clones
  memory::LedgerEntry post_forward_entry_;
  at::Tensor persistent_all_gather_;
  memory::LedgerEntry persistent_entry_;
};

}  // namespace shardfuzz::fsdp
