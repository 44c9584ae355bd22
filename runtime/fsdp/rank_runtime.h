// One rank's runtime services that the FSDP state machine reports to: its semantics profile, its
// ledger, its timeline, and the registry of its groups (whose states every timeline event
// snapshots: which hold a pending all-gather, which are unsharded). It knows a group by its name,
// its address and the snapshot it registered, never its class (param_group.h includes this header).
#pragma once

#include "runtime/ac/checkpoint.h"
#include "runtime/semantics/profile.h"
#include "runtime/memory/ledger.h"
#include "runtime/memory/probe.h"
#include "runtime/memory/timeline.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace shardfuzz::fsdp {

class ParamGroup;

// What a registered group adds to each timeline event: its name where it holds a pending all-gather
// (and its bytes), is unsharded or finished backward, and its unsharded gradients' bytes. Called on
// the recording thread with the registry locked: it reads the group's own state only.
using GroupSnapshot = std::function<void(memory::TimelineEvent&)>;

class RankRuntime {
 public:
  // `probe`: where this rank's tensors live and its bytes are read (the CPU allocator by default).
  RankRuntime(int rank, semantics::Profile profile, memory::Probe probe = memory::Probe::cpu());
  ~RankRuntime();
  RankRuntime(const RankRuntime&) = delete;
  RankRuntime& operator=(const RankRuntime&) = delete;

  int rank() const { return rank_; }
  const semantics::Profile& profile() const { return profile_; }
  const memory::Probe& probe() const { return probe_; }
  memory::Ledger& ledger() { return *ledger_; }
  const std::shared_ptr<memory::Ledger>& ledger_ptr() const { return ledger_; }
  memory::Timeline& timeline() { return timeline_; }

  int step() const { return step_; }
  void set_step(int step) { step_ = step; }

  void register_group(ParamGroup* group, std::string name, GroupSnapshot snapshot);
  void unregister_group(ParamGroup* group);
  std::vector<ParamGroup*> groups() const;
  ParamGroup* find_group(const std::string& name) const;  // nullptr when none

  // Appends one timeline event, under its category (memory::category_of), with the memory picture
  // right now (allocator bytes relative to when this runtime was created).
  void record(memory::Event event, const std::string& group, nlohmann::json detail = nlohmann::json::object());
  // Off: record() keeps nothing (the benchmarks' measure of what the timeline costs; the
  // properties need it on).
  void set_timeline_enabled(bool enabled) { timeline_enabled_ = enabled; }
  // On: each post_backward checks its gradients for NaN/Inf and records a "nonfinite_grad" event
  // naming the first parameter (off by default: it costs a pass over every gradient).
  void set_check_finite_grads(bool on) { check_finite_grads_ = on; }
  bool check_finite_grads() const { return check_finite_grads_; }
  // Records what this rank's activation-checkpoint regions report as "checkpoint_forward" and
  // "checkpoint_recompute" events of category "ac" (group: the region's module path; detail: mode,
  // saves, matmul_like_ran, outputs_kept, bytes_kept, outputs_reused). Install it with
  // ac::RegionObserverGuard; it does nothing once this runtime is gone (a region may outlive it).
  ac::RegionObserver checkpoint_observer();

 private:
  int rank_;
  semantics::Profile profile_;
  memory::Probe probe_;
  std::shared_ptr<memory::Ledger> ledger_;
  memory::Timeline timeline_;
  int step_ = 0;
  bool timeline_enabled_ = true;
  bool check_finite_grads_ = false;
  // The probe counts per rank for the whole process; events report bytes above this runtime's start.
  int64_t baseline_bytes_ = 0;
  mutable std::mutex mu_;
  struct RegisteredGroup {
    ParamGroup* group;
    std::string name;
    GroupSnapshot snapshot;
  };
  std::vector<RegisteredGroup> groups_;  // in registration order
  std::shared_ptr<std::atomic<RankRuntime*>> self_ = std::make_shared<std::atomic<RankRuntime*>>(this);
};

}  // namespace shardfuzz::fsdp
