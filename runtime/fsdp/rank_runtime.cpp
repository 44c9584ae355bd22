// Registry and event recording for one rank.
#include "runtime/fsdp/rank_runtime.h"

#include "runtime/fsdp/param_group.h"
#include "runtime/memory/counting_allocator.h"

#include <algorithm>

namespace shardfuzz::fsdp {

RankRuntime::RankRuntime(int rank, Profile profile)
    : rank_(rank), profile_(std::move(profile)), ledger_(std::make_shared<memory::Ledger>(rank)) {}

void RankRuntime::register_group(ParamGroup* group) {
  std::lock_guard<std::mutex> lock(mu_);
  groups_.push_back(group);
}

void RankRuntime::unregister_group(ParamGroup* group) {
  std::lock_guard<std::mutex> lock(mu_);
  groups_.erase(std::remove(groups_.begin(), groups_.end(), group), groups_.end());
}

std::vector<ParamGroup*> RankRuntime::groups() const {
  std::lock_guard<std::mutex> lock(mu_);
  return groups_;
}

ParamGroup* RankRuntime::find_group(const std::string& name) const {
  for (ParamGroup* g : groups())
    if (g->name() == name) return g;
  return nullptr;
}

std::vector<std::string> RankRuntime::groups_with_pending_all_gather() const {
  std::vector<std::string> out;
  for (ParamGroup* g : groups())
    if (g->has_pending_all_gather()) out.push_back(g->name());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> RankRuntime::unsharded_groups() const {
  std::vector<std::string> out;
  for (ParamGroup* g : groups())
    if (g->is_unsharded()) out.push_back(g->name());
  std::sort(out.begin(), out.end());
  return out;
}

void RankRuntime::record(const std::string& event, const std::string& group, nlohmann::json detail,
                         const std::string& category) {
  memory::TimelineEvent e;
  e.event = event;
  e.group = group;
  e.detail = std::move(detail);
  e.category = category;
  e.rank = rank_;
  e.step = step_;
  memory::RankBytes bytes = memory::allocated_bytes(rank_);
  e.allocated_bytes = bytes.current;
  e.peak_bytes = bytes.peak;
  e.ledger = ledger_->totals();
  e.pending_all_gather = groups_with_pending_all_gather();
  e.unsharded = unsharded_groups();
  timeline_.record(std::move(e));
}

}  // namespace shardfuzz::fsdp
