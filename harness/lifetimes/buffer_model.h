// An executable model of FSDP2's buffer lifetimes on one rank, beside the system under test in the
// style of RapidCheck's and Hypothesis's state-machine testing: stepped by the rank's timeline, it
// predicts after every event which runtime buffers (group, kind, bytes) are alive, and the caller
// compares that with the ledger the runtime booked.
//
// It is written from docs/fsdp2-semantics.md (sections 3-10) and the recorded torch traces, not from
// runtime/: each group is sharded, has an all-gather pending (issued, not yet waited on), holds its
// unsharded parameters or a 1/N post-forward slice, parks its consumed all-gather in the shared
// deferred slot (implicit forward), keeps one reduce-scatter input (upstream's K = 1), an HSDP reduce
// output, sharded gradients and optimizer moments. A wait, a deferred flush and the root callback's
// drain happen between events, so the model resolves them at the next event. The profile's switches
// are the model's switches (semantics::Profile). Where a profile changes only which events happen
// (torch-2.9's recompute runs post_forward's reshard and records it), the model follows the events:
// the leak's mistargeted all-gather is then what it expects, and per_layer_return_to_baseline
// names the leak; where a profile changes what an event frees (strict's drop of unconsumed
// all-gathers, the HSDP output kept per group, world-1's persistent buffer), a switch does.
//
// Where FSDP2 leaves a size open (which parameters got a gradient; whether a slice or the whole
// group was kept), the model names the one event at which a (group, kind) may take a new value
// within a bound and learns the value there; everywhere else the bytes must stay exactly as they were.
#pragma once

#include "harness/lifetimes/group_sizes.h"
#include "runtime/memory/timeline.h"
#include "runtime/semantics/profile.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::harness::lifetimes {

// What one (group, kind) may hold after an event: exactly `bytes`, or (learn) any value in
// [min, max], which the model then takes as the exact value from there on.
struct Slot {
  int64_t bytes = 0;
  bool learn = false;
  int64_t min = 0, max = 0;
  const char* why = "allocated at wrapping";  // the transition that set it, for messages
  void set(int64_t b, const char* reason) { bytes = b, learn = false, why = reason; }
  void may_become(int64_t lo, int64_t hi, const char* reason) { learn = true, min = lo, max = hi, why = reason; }
};

struct ModelSwitches {
  bool drop_unconsumed_at_post_backward = false;  // strict: a finished group's prefetch is freed at once
  bool all_reduce_state_per_group = false;       // before PR #179443: each group keeps its HSDP output
  bool stale_state_survives_non_last_backward = false;
  bool world1_persistent_all_gather = false;     // torch >= 2.11: world size 1 reuses one buffer
  bool recompute_of_finished_group_takes_forward_path = false;  // strict: S6's second use re-runs forward
  bool adamw = false;
  int micro_batches = 1;
  // Some fully_shard-ed module holds no parameters of its own: its hooks record no event.
  bool parameterless_states = false;
  static ModelSwitches of(const semantics::Profile& profile);
  static ModelSwitches of(const Scenario& sc, const std::map<std::string, GroupSizes>& sizes);
};

class BufferModel {
 public:
  BufferModel(std::map<std::string, GroupSizes> sizes, ModelSwitches switches);

  // Advances past `e`: first what happened since the previous event (waits, the deferred flush, the
  // root callback's drain), then the event's own transition.
  void step(const memory::TimelineEvent& e);
  // The first (group, kind) whose booked bytes differ from the model's after the last step, as a
  // sentence ("" when every one agrees); learned values are taken as exact from here on.
  std::string compare_and_learn(const std::map<std::string, memory::KindTotals>& booked);
  // Every (group, kind) the model holds bytes of.
  std::map<std::string, memory::KindTotals> expected() const;
  // The groups with an all-gather pending, and those holding unsharded parameters, sorted: what a
  // recorded torch trace lists after each event.
  std::vector<std::string> pending_groups() const;
  std::vector<std::string> unsharded_groups() const;
  // What a reset after a fault returns to: this model (the step's start) with every gathered buffer
  // and reduce state dropped, plus the buffers kept across steps that `attempt` created (the world-1
  // persistent all-gather buffer, optimizer moments).
  BufferModel after_recovery(const BufferModel& attempt) const;

 private:
  enum class State { Idle, Forward, PreBackward, PostBackward };
  struct Group {
    GroupSizes size;
    State state = State::Idle;
    bool pending = false, unsharded = false;
    std::optional<bool> wait_due;  // a wait follows (true: in forward, the implicit deferred free)
    bool hooked_for_backward = false;  // its state's pre-backward hook fired in this pass
    bool silent_wait_may_run = false;  // a recompute may wait for its all-gather with no event
    std::array<Slot, memory::kBufferKinds> slots{};
    Slot& slot(memory::BufferKind k) { return slots[static_cast<std::size_t>(k)]; }
  };

  bool gathers_into_persistent_buffer(const Group& g) const;
  void settle(const memory::TimelineEvent& e);  // between the previous event and e
  void settle_group(const std::string& name, Group& g, const memory::TimelineEvent& e);
  void learn_silent_wait(Group& g);
  void wait_for_all_gather(const std::string& name, Group& g, bool forward);
  void free_deferred();
  void may_have_flushed();  // the deferred slot may be empty now (a flush no event records)
  void on_pre_forward(Group& g, const std::string& name);
  void on_all_gather_issued(Group& g, const std::string& name);
  void on_reshard(Group& g);
  void on_post_forward(const std::string& name);
  void on_forward_end();
  void on_pre_backward_begin(Group& g);
  void on_post_backward(Group& g, const std::string& name);
  void on_finalize_backward(Group& g);
  void on_backward_end(const memory::TimelineEvent& e);
  void on_optimizer_step();
  void on_zero_grad();

  std::map<std::string, Group> groups_;
  ModelSwitches switches_;
  std::string deferred_owner_;    // the group whose consumed all-gather sits in the deferred slot
  std::string iter_forward_root_;  // the group whose post_forward flushes that slot
  bool flush_due_ = false;
  bool flush_may_be_due_ = false;  // a parameterless forward root's flush may have run
  std::string prefetch_target_;   // the previous event was a prefetch of this group (not skipped)
};

}  // namespace shardfuzz::harness::lifetimes
