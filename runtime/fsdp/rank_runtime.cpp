// Registry and event recording for one rank.
#include "runtime/fsdp/rank_runtime.h"

#include <algorithm>
#include <chrono>

namespace shardfuzz::fsdp {

RankRuntime::RankRuntime(int rank, semantics::Profile profile, memory::Probe probe)
    : rank_(rank), profile_(std::move(profile)), probe_(probe), ledger_(std::make_shared<memory::Ledger>(rank)) {
  probe_.reset_peak(rank_);
  baseline_bytes_ = probe_.bytes(rank_).current;
}

void RankRuntime::register_group(ParamGroup* group, std::string name, GroupSnapshot snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  groups_.push_back({group, std::move(name), std::move(snapshot)});
}

void RankRuntime::unregister_group(ParamGroup* group) {
  std::lock_guard<std::mutex> lock(mu_);
  groups_.erase(std::remove_if(groups_.begin(), groups_.end(), [&](const RegisteredGroup& g) { return g.group == group; }),
                groups_.end());
}

std::vector<ParamGroup*> RankRuntime::groups() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ParamGroup*> out;
  out.reserve(groups_.size());
  for (const RegisteredGroup& g : groups_) out.push_back(g.group);
  return out;
}

ParamGroup* RankRuntime::find_group(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const RegisteredGroup& g : groups_)
    if (g.name == name) return g.group;
  return nullptr;
}

RankRuntime::~RankRuntime() { self_->store(nullptr); }

ac::RegionObserver RankRuntime::checkpoint_observer() {
  std::weak_ptr<std::atomic<RankRuntime*>> self = self_;
  return [self](const ac::RegionReport& r) {
    auto alive = self.lock();
    RankRuntime* rt = alive ? alive->load() : nullptr;
    if (!rt) return;
    rt->record(r.pass == ac::RegionReport::Pass::Forward ? memory::Event::CheckpointForward
                                                         : memory::Event::CheckpointRecompute,
               r.where,
               {{"mode", ac::to_string(r.mode)},
                {"saves", r.saves},
                {"matmul_like_ran", r.matmul_like_ran},
                {"outputs_kept", r.outputs_kept},
                {"bytes_kept", r.bytes_kept},
                {"outputs_reused", r.outputs_reused}});
  };
}

void RankRuntime::record(memory::Event event, const std::string& group, nlohmann::json detail) {
  if (!timeline_enabled_) return;
  memory::TimelineEvent e;
  e.event = event;
  e.group = group;
  e.detail = std::move(detail);
  e.category = memory::category_of(event);
  e.rank = rank_;
  e.step = step_;
  e.at_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
                .count();
  memory::RankBytes bytes = probe_.bytes(rank_);
  e.allocated_bytes = bytes.current - baseline_bytes_;
  e.peak_bytes = bytes.peak - baseline_bytes_;
  e.reserved_bytes = probe_.reserved_bytes();
  // One snapshot of the ledger: by group, and from it the totals by kind and the HSDP outputs kept.
  e.ledger_by_group = ledger_->by_group();
  for (const auto& [g, kinds] : e.ledger_by_group) {
    for (int k = 0; k < memory::kBufferKinds; ++k) e.ledger[k] += kinds[k];
    if (const int64_t kept = kinds[static_cast<int>(memory::BufferKind::AllReduceInput)]; kept > 0)
      e.all_reduce_input_bytes[g] = kept;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const RegisteredGroup& g : groups_) g.snapshot(e);
  }
  std::sort(e.pending_all_gather.begin(), e.pending_all_gather.end());
  std::sort(e.unsharded.begin(), e.unsharded.end());
  std::sort(e.finished_backward.begin(), e.finished_backward.end());
  timeline_.record(std::move(e));
}

}  // namespace shardfuzz::fsdp
