// Timeline storage and its JSON form (the RunRecord's per-rank timeline).
#include "runtime/memory/timeline.h"

namespace shardfuzz::memory {

int64_t TimelineEvent::ledger_total() const {
  int64_t sum = 0;
  for (int64_t v : ledger) sum += v;
  return sum;
}

nlohmann::json TimelineEvent::to_json() const {
  nlohmann::json kinds = nlohmann::json::object();
  for (int k = 0; k < kBufferKinds; ++k)
    if (ledger[k] != 0) kinds[to_string(static_cast<BufferKind>(k))] = ledger[k];
  nlohmann::json j = {{"event", event},
                      {"group", group},
                      {"category", category},
                      {"rank", rank},
                      {"step", step},
                      {"allocated_bytes", allocated_bytes},
                      {"peak_bytes", peak_bytes},
                      {"ledger", kinds},
                      {"pending_all_gather", pending_all_gather},
                      {"unsharded", unsharded}};
  if (!detail.empty()) j["detail"] = detail;
  return j;
}

void Timeline::record(TimelineEvent event) {
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(event));
}

std::vector<TimelineEvent> Timeline::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

std::vector<TimelineEvent> Timeline::events_of_step(int step, const std::string& category) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TimelineEvent> out;
  for (const auto& e : events_)
    if (e.step == step && e.category == category) out.push_back(e);
  return out;
}

void Timeline::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
}

std::size_t Timeline::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

}  // namespace shardfuzz::memory
