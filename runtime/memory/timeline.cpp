// Timeline storage and its JSON form (the RunRecord's per-rank timeline).
#include "runtime/memory/timeline.h"

#include <algorithm>
#include <iterator>
#include <utility>

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
  if (reserved_bytes != 0) j["reserved_bytes"] = reserved_bytes;
  if (!all_reduce_input_bytes.empty()) j["all_reduce_input_bytes"] = all_reduce_input_bytes;
  if (!detail.empty()) j["detail"] = detail;
  return j;
}

TimelineEvent TimelineEvent::from_json(const nlohmann::json& j) {
  TimelineEvent e;
  e.event = j.at("event").get<std::string>();
  e.group = j.at("group").get<std::string>();
  e.category = j.at("category").get<std::string>();
  e.rank = j.at("rank").get<int>();
  e.step = j.at("step").get<int>();
  e.at_ns = j.at("at_ns").get<int64_t>();
  e.allocated_bytes = j.at("allocated_bytes").get<int64_t>();
  e.peak_bytes = j.at("peak_bytes").get<int64_t>();
  e.reserved_bytes = j.value("reserved_bytes", int64_t{0});
  e.unsharded_grad_bytes = j.at("unsharded_grad_bytes").get<int64_t>();
  for (const auto& [name, bytes] : j.at("ledger").items()) {
    int k = 0;
    while (k < kBufferKinds && name != to_string(static_cast<BufferKind>(k))) ++k;
    if (k == kBufferKinds) throw nlohmann::json::other_error::create(501, "unknown buffer kind '" + name + "'", &j);
    e.ledger[k] = bytes.get<int64_t>();
  }
  e.pending_all_gather = j.at("pending_all_gather").get<std::vector<std::string>>();
  e.unsharded = j.at("unsharded").get<std::vector<std::string>>();
  e.finished_backward = j.at("finished_backward").get<std::vector<std::string>>();
  e.pending_all_gather_bytes = j.at("pending_all_gather_bytes").get<std::map<std::string, int64_t>>();
  e.all_reduce_input_bytes = j.value("all_reduce_input_bytes", std::map<std::string, int64_t>{});
  if (j.contains("detail")) e.detail = j.at("detail");
  return e;
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
  if (first == 0) return std::exchange(events_, {});
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
