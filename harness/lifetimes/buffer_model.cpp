#include "harness/lifetimes/buffer_model.h"

#include <algorithm>
#include <sstream>

namespace shardfuzz::harness::lifetimes {

using memory::BufferKind;
using memory::Event;

ModelSwitches ModelSwitches::of(const semantics::Profile& p) {
  ModelSwitches s;
  s.drop_unconsumed_at_post_backward = p.free_unconsumed_all_gather_at_post_backward;
  s.all_reduce_state_per_group = p.all_reduce_state_per_group;
  s.stale_state_survives_non_last_backward = p.stale_state_survives_non_last_backward;
  s.world1_persistent_all_gather = p.world1_persistent_all_gather_buffer;
  s.recompute_of_finished_group_takes_forward_path = p.recompute_of_finished_group_takes_forward_path;
  return s;
}

ModelSwitches ModelSwitches::of(const Scenario& sc, const std::map<std::string, GroupSizes>& sizes) {
  ModelSwitches s = of(sc.profile);
  s.adamw = sc.optimizer.kind == train::OptimizerConfig::Kind::AdamW;
  s.micro_batches = sc.micro_batches;
  for (const auto& [path, spec] : sc.fully_shard)
    if (!sizes.count(path.empty() ? "root" : path)) s.parameterless_states = true;
  return s;
}

BufferModel::BufferModel(std::map<std::string, GroupSizes> sizes, ModelSwitches switches) : switches_(switches) {
  for (auto& [name, size] : sizes) {
    Group& g = groups_[name];
    g.size = size;
    g.slot(BufferKind::ShardedParam).set(size.sharded, "allocated at wrapping, kept for the whole run");
  }
}

// --- between events ----------------------------------------------------------------------------

void BufferModel::settle(const memory::TimelineEvent& e) {
  for (auto& [name, g] : groups_) settle_group(name, g, e);
  if (flush_due_) {
    free_deferred();
    flush_due_ = false;
  }
  if (flush_may_be_due_) {
    may_have_flushed();
    flush_may_be_due_ = false;
  }
}

void BufferModel::settle_group(const std::string& name, Group& g, const memory::TimelineEvent& e) {
  // The unshard that comes before its own wait: the wait follows this event.
  const bool own_unshard = e.event == Event::AllGatherIssued && e.group == name;
  if (g.wait_due && !own_unshard) {
    const bool forward = *g.wait_due;
    g.wait_due.reset();
    wait_for_all_gather(name, g, forward);
  }
  // A recompute that reaches a state whose pre-backward hook already fired takes the unshard-only
  // path (section 3): it waits for a prefetched all-gather and records no event. Where the profile
  // sends a finished group's second use down the forward path instead, only a group still in
  // backward does.
  const bool unshard_only = g.hooked_for_backward && (g.state != State::PostBackward ||
                                                      !switches_.recompute_of_finished_group_takes_forward_path);
  if (g.pending && unshard_only && !own_unshard) {
    g.silent_wait_may_run = true;
    Slot& pending = g.slot(BufferKind::PendingAllGather);
    pending.may_become(0, pending.bytes, "issued, alive until its wait (a recompute's, unrecorded, or its hook's)");
    Slot& unsharded = g.slot(BufferKind::UnshardedParam);
    unsharded.may_become(unsharded.bytes, g.size.unsharded, "copied out by a recompute's unrecorded wait");
  }
}

// Whether the unrecorded wait ran, as the bytes show: the parameters were copied out.
void BufferModel::learn_silent_wait(Group& g) {
  if (!g.silent_wait_may_run) return;
  g.silent_wait_may_run = false;
  if (g.unsharded || g.slot(BufferKind::UnshardedParam).bytes == 0) return;
  g.pending = false;
  g.unsharded = true;
  g.slot(BufferKind::PendingAllGather).set(0, "consumed by a recompute's unrecorded wait");
  g.slot(BufferKind::ShardedPostForward).set(0, "dropped by the wait that gathered from it");
}

void BufferModel::wait_for_all_gather(const std::string& name, Group& g, bool forward) {
  if (!g.pending) return;  // unsharded already (kept after forward, or gathered for an earlier use)
  g.pending = false;
  g.slot(BufferKind::PendingAllGather).set(0, "consumed by its wait (copy-out)");
  if (forward) {
    // Implicit forward: the wait frees the previous group's parked output and parks this one.
    free_deferred();
    if (g.size.shard_size > 1) {
      deferred_owner_ = name;
      g.slot(BufferKind::DeferredAllGather).set(g.size.all_gather, "parked by its forward wait until the next one");
    }
  }
  g.unsharded = true;
  g.slot(BufferKind::UnshardedParam).set(g.size.unsharded, "copied out by its wait, alive until its reshard");
  g.slot(BufferKind::ShardedPostForward).set(0, "dropped by the wait that gathered from it");
}

void BufferModel::may_have_flushed() {
  if (deferred_owner_.empty()) return;
  Slot& parked = groups_[deferred_owner_].slot(BufferKind::DeferredAllGather);
  parked.may_become(0, parked.bytes, "parked until the next forward wait, or a forward root's flush");
}

void BufferModel::free_deferred() {
  if (deferred_owner_.empty()) return;
  groups_[deferred_owner_].slot(BufferKind::DeferredAllGather).set(0, "freed by the next forward wait or the root's flush");
  deferred_owner_.clear();
}

// --- events ------------------------------------------------------------------------------------

void BufferModel::step(const memory::TimelineEvent& e) {
  settle(e);
  auto it = groups_.find(e.group);
  Group* g = it == groups_.end() ? nullptr : &it->second;
  switch (e.event) {
    case Event::PreForward: if (g) on_pre_forward(*g, e.group); break;
    case Event::AllGatherIssued: if (g) on_all_gather_issued(*g, e.group); break;
    case Event::Reshard: if (g) on_reshard(*g); break;
    case Event::PostForward: if (g) on_post_forward(e.group); break;
    case Event::PreBackwardBegin: if (g) on_pre_backward_begin(*g); break;
    case Event::NonfiniteGrad:  // recorded inside post_backward, after the reduce
    case Event::PostBackward: if (g) on_post_backward(*g, e.group); break;
    case Event::FinalizeBackward: if (g) on_finalize_backward(*g); break;
    case Event::BackwardEnd: on_backward_end(e); break;
    case Event::ForwardEnd:
    case Event::EvalForwardEnd: on_forward_end(); break;
    case Event::OptimizerStep: on_optimizer_step(); break;
    case Event::ZeroGrad: on_zero_grad(); break;
    // The rest allocate and free nothing FSDP2 owns. (A reset after a fault is after_recovery's: a
    // failed attempt is judged only where it ends.)
    default: break;
  }
  prefetch_target_ = e.event == Event::Prefetch && !e.skipped() ? e.prefetch_target().value_or("") : "";
}

void BufferModel::on_pre_forward(Group& g, const std::string& name) {
  g.state = State::Forward;
  g.hooked_for_backward = false;
  g.wait_due = true;
  if (switches_.parameterless_states) {
    // The forward root may be a state with no parameters of its own (the root module, or a block
    // whose parameters all sit in nested groups, re-entered by a recompute): its post_forward, which
    // flushes the deferred slot, records no event. The next forward wait frees the slot in any case.
    may_have_flushed();
    return;
  }
  // The first state to run forward is the iteration's forward root (in backward: a recompute's).
  if (iter_forward_root_.empty()) iter_forward_root_ = name;
}

bool BufferModel::gathers_into_persistent_buffer(const Group& g) const {
  return switches_.world1_persistent_all_gather && g.size.shard_size == 1;
}

void BufferModel::on_all_gather_issued(Group& g, const std::string& name) {
  g.pending = true;
  if (gathers_into_persistent_buffer(g)) {
    // No collective: the unshard wraps the one persistent buffer, allocated at the first and kept.
    g.slot(BufferKind::PersistentAllGather).set(g.size.all_gather, "the world-1 persistent all-gather buffer, kept");
  } else {
    Slot& pending = g.slot(BufferKind::PendingAllGather);
    pending.set(pending.bytes + g.size.all_gather, "issued, alive until its wait");
  }
  // A prefetch's all-gather waits for its group's own hook; the group's own unshard waits at once.
  if (prefetch_target_ != name) g.wait_due = g.state == State::Forward;
}

void BufferModel::on_reshard(Group& g) {
  const bool in_forward = g.state == State::Forward;  // between its pre_forward and post_forward
  // The scenario's reshard_after_forward, not the event's own "kept": a reshard that ignores it
  // is judged by what it keeps.
  if (in_forward && g.size.keeps_after_forward) return;
  g.unsharded = false;
  g.slot(BufferKind::UnshardedParam).set(0, "freed by its reshard");
  if (in_forward && g.size.shard_size > 2) {
    // An int reshard_after_forward keeps a 1/N clone (N >= 2) instead: which one the scenario asked
    // is reshard_after_forward_honoured's to judge.
    Slot& slice = g.slot(BufferKind::ShardedPostForward);
    slice.may_become(0, g.size.all_gather / 2, "its 1/N post-forward slice, kept until the next gather");
  } else {
    g.slot(BufferKind::ShardedPostForward).set(0, "freed by its reshard");
  }
}

void BufferModel::on_post_forward(const std::string& name) {
  groups_[name].state = State::Idle;
  if (switches_.parameterless_states) flush_may_be_due_ = true;  // the post_forward may be a forward root's
  if (name == iter_forward_root_) {  // the forward root's post_forward flushes the deferred slot
    flush_due_ = true;
    iter_forward_root_.clear();
  }
}

void BufferModel::on_forward_end() {
  // The root's post_forward flushed the deferred slot (recorded or not: a parameterless root).
  free_deferred();
  iter_forward_root_.clear();
}

void BufferModel::on_pre_backward_begin(Group& g) {
  g.hooked_for_backward = true;
  if (g.state == State::PreBackward) return;  // the first output's hook wins
  g.state = State::PreBackward;
  g.wait_due = false;
}

void BufferModel::on_post_backward(Group& g, const std::string& name) {
  g.state = State::PostBackward;
  for (auto& [other, h] : groups_) {
    if (switches_.drop_unconsumed_at_post_backward && h.pending) {
      // strict frees the all-gather of a group no backward of this pass will consume (this one's
      // too); whether one will (a group used twice) is per_layer_return_to_baseline's to judge.
      Slot& pending = h.slot(BufferKind::PendingAllGather);
      pending.may_become(0, pending.bytes, "an all-gather no backward may consume, dropped at post_backward");
    }
    if (other == name) continue;
    // K = 1: the reduce drains every older reduce-scatter input before it keeps its own.
    h.slot(BufferKind::ReduceScatterInput).set(0, "drained by the next group's reduce (K = 1)");
    if (!switches_.all_reduce_state_per_group)
      h.slot(BufferKind::AllReduceInput).set(0, "dropped by the next group's reduce (one HSDP output lives)");
  }
  g.slot(BufferKind::ReduceScatterInput)
      .may_become(0, g.size.reduce_scatter_bound, "its reduce-scatter input, kept until the next reduce");
  g.slot(BufferKind::AllReduceInput).may_become(0, g.size.reduce_scatter_bound, "its HSDP reduce output");
  Slot& grad = g.slot(BufferKind::Grad);
  grad.may_become(grad.bytes, std::max(grad.bytes, g.size.grad_bound), "its sharded gradients, reduced");
}

void BufferModel::on_finalize_backward(Group& g) {
  g.pending = false;
  g.slot(BufferKind::PendingAllGather).set(0, "an unconsumed all-gather, dropped by finalize_backward");
  if (switches_.all_reduce_state_per_group)
    g.slot(BufferKind::AllReduceInput).set(0, "its HSDP reduce output, dropped by finalize_backward");
  iter_forward_root_.clear();
}

void BufferModel::on_backward_end(const memory::TimelineEvent& e) {
  const int micro_batch = e.micro_batch().value_or(switches_.micro_batches - 1);
  const bool last = micro_batch >= switches_.micro_batches - 1;
  const bool finalize_schedule = last || !switches_.stale_state_survives_non_last_backward;
  for (auto& [name, g] : groups_) {
    g.state = State::Idle;
    g.hooked_for_backward = false;
    if (last) g.slot(BufferKind::ReduceScatterInput).set(0, "drained by the root callback of the last backward");
    if (finalize_schedule)
      g.slot(BufferKind::AllReduceInput).set(0, "dropped by the root callback");
  }
  iter_forward_root_.clear();
}

void BufferModel::on_optimizer_step() {
  if (!switches_.adamw) return;
  // Moments are created lazily, for the parameters that have a gradient, and kept.
  for (auto& [name, g] : groups_) {
    Slot& state = g.slot(BufferKind::OptimizerState);
    state.may_become(state.bytes, std::max(state.bytes, g.size.optimizer_bound), "AdamW's moments, kept");
  }
}

void BufferModel::on_zero_grad() {
  for (auto& [name, g] : groups_) g.slot(BufferKind::Grad).set(0, "set to None by zero_grad");
}

// --- judging -----------------------------------------------------------------------------------

std::string BufferModel::compare_and_learn(const std::map<std::string, memory::KindTotals>& booked) {
  static const memory::KindTotals kNone{};
  std::string mismatch;
  for (auto& [name, g] : groups_) {
    const auto it = booked.find(name);
    const memory::KindTotals& have = it == booked.end() ? kNone : it->second;
    for (int k = 0; k < memory::kBufferKinds; ++k) {
      Slot& slot = g.slots[static_cast<std::size_t>(k)];
      const int64_t bytes = have[static_cast<std::size_t>(k)];
      if (slot.learn && bytes >= slot.min && bytes <= slot.max) {
        slot.set(bytes, slot.why);
        if (static_cast<BufferKind>(k) == BufferKind::DeferredAllGather && bytes == 0 && deferred_owner_ == name)
          deferred_owner_.clear();
        // Dropped or consumed unrecorded: no longer pending. (A world-1 group gathering into its
        // persistent buffer books no pending bytes either way; if it was dropped, its next hook
        // issues the all-gather again.)
        if (static_cast<BufferKind>(k) == BufferKind::PendingAllGather && bytes == 0 && !gathers_into_persistent_buffer(g))
          g.pending = false;
        continue;
      }
      if (!slot.learn && bytes == slot.bytes) continue;
      if (!mismatch.empty()) continue;
      std::ostringstream os;
      os << "group " << name << " " << memory::to_string(static_cast<BufferKind>(k)) << ": the ledger books " << bytes
         << " bytes, FSDP2 holds ";
      if (slot.learn)
        os << "between " << slot.min << " and " << slot.max;
      else
        os << slot.bytes;
      os << " (" << slot.why << ")";
      mismatch = os.str();
      slot.set(bytes, slot.why);  // judge what follows from what is there
    }
    learn_silent_wait(g);
  }
  for (const auto& [name, totals] : booked) {
    if (groups_.count(name) || !mismatch.empty()) continue;
    for (int64_t v : totals)
      if (v != 0) return "group " + name + " holds ledger bytes but is no FSDP group of this rank";
  }
  return mismatch;
}

BufferModel BufferModel::after_recovery(const BufferModel& attempt) const {
  BufferModel clean = *this;
  clean.deferred_owner_.clear();
  clean.iter_forward_root_.clear();
  clean.flush_due_ = clean.flush_may_be_due_ = false;
  clean.prefetch_target_.clear();
  for (auto& [name, g] : clean.groups_) {
    // The reset drops every gathered buffer (what a previous forward kept too: the next use gathers
    // again) and every reduce state; it restores gradients and moments to the step's start.
    g.state = State::Idle;
    g.wait_due.reset();
    g.pending = g.unsharded = g.hooked_for_backward = g.silent_wait_may_run = false;
    for (BufferKind k : {BufferKind::PendingAllGather, BufferKind::UnshardedParam, BufferKind::DeferredAllGather,
                         BufferKind::ShardedPostForward, BufferKind::ReduceScatterInput, BufferKind::AllReduceInput})
      g.slot(k).set(0, "dropped by the reset after a fault");
    const Group& tried = attempt.groups_.at(name);
    for (BufferKind k : {BufferKind::PersistentAllGather, BufferKind::OptimizerState}) {
      const Slot& kept = tried.slots[static_cast<std::size_t>(k)];
      if (kept.bytes > g.slot(k).bytes) g.slot(k).set(kept.bytes, "created by the failed attempt and kept");
    }
  }
  return clean;
}

std::vector<std::string> BufferModel::pending_groups() const {
  std::vector<std::string> out;
  for (const auto& [name, g] : groups_)
    if (g.pending) out.push_back(name);
  return out;
}

std::vector<std::string> BufferModel::unsharded_groups() const {
  std::vector<std::string> out;
  for (const auto& [name, g] : groups_)
    if (g.unsharded) out.push_back(name);
  return out;
}

std::map<std::string, memory::KindTotals> BufferModel::expected() const {
  std::map<std::string, memory::KindTotals> out;
  for (const auto& [name, g] : groups_)
    for (int k = 0; k < memory::kBufferKinds; ++k)
      if (g.slots[static_cast<std::size_t>(k)].bytes != 0) out[name][static_cast<std::size_t>(k)] = g.slots[static_cast<std::size_t>(k)].bytes;
  return out;
}

}  // namespace shardfuzz::harness::lifetimes
