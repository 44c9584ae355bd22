// Timeline storage and its JSON form (the RunRecord's per-rank timeline).
#include "runtime/memory/timeline.h"

#include <algorithm>
#include <iterator>

namespace shardfuzz::memory {

int64_t TimelineEvent::ledger_total() const {
  int64_t sum = 0;
  for (int64_t v : ledger) sum += v;
  return sum;
}

std::vector<std::string> TimelineEvent::stale_all_gathers() const {
  std::vector<std::string> out;
  for (const auto& g : pending_all_gather)
    if (std::find(finished_backward.begin(), finished_backward.end(), g) != finished_backward.end()) out.push_back(g);
  return out;
}

int64_t TimelineEvent::stale_all_gather_bytes() const {
  int64_t sum = 0;
  for (const auto& g : stale_all_gathers()) {
    auto it = pending_all_gather_bytes.find(g);
    if (it != pending_all_gather_bytes.end()) sum += it->second;
  }
  return sum;
}

int64_t TimelineEvent::pending_total_bytes() const {
  int64_t sum = 0;
  for (const auto& [g, b] : pending_all_gather_bytes) sum += b;
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
                      {"at_ns", at_ns},
                      {"allocated_bytes", allocated_bytes},
                      {"peak_bytes", peak_bytes},
                      {"unsharded_grad_bytes", unsharded_grad_bytes},
                      {"ledger", kinds},
                      {"pending_all_gather", pending_all_gather},
                      {"unsharded", unsharded},
                      {"finished_backward", finished_backward},
                      {"pending_all_gather_bytes", pending_all_gather_bytes}};
  if (!all_reduce_input_bytes.empty()) j["all_reduce_input_bytes"] = all_reduce_input_bytes;
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

std::vector<TimelineEvent> events_of_step(const std::vector<TimelineEvent>& events, int step,
                                          const std::string& category) {
  std::vector<TimelineEvent> out;
  for (const auto& e : events)
    if (e.step == step && e.category == category) out.push_back(e);
  return out;
}

std::vector<TimelineEvent> Timeline::events_of_step(int step, const std::string& category) const {
  std::lock_guard<std::mutex> lock(mu_);
  return memory::events_of_step(events_, step, category);
}

void Timeline::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  events_.clear();
}

std::vector<TimelineEvent> Timeline::take_from(std::size_t first) {
  std::lock_guard<std::mutex> lock(mu_);
  first = std::min(first, events_.size());
  std::vector<TimelineEvent> out(std::make_move_iterator(events_.begin() + static_cast<std::ptrdiff_t>(first)),
                                 std::make_move_iterator(events_.end()));
  events_.resize(first);
  return out;
}

std::size_t Timeline::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

}  // namespace shardfuzz::memory
