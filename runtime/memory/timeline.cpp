// Timeline storage and its JSON form (the RunRecord's per-rank timeline).
#include "runtime/memory/timeline.h"

#include <algorithm>
#include <iterator>
#include <type_traits>
#include <utility>

namespace shardfuzz::memory {
namespace {

// The detail's value at `key` when it is there with type T; nothing otherwise.
template <class T>
std::optional<T> detail_value(const nlohmann::json& detail, const char* key) {
  if (!detail.is_object()) return std::nullopt;
  const auto it = detail.find(key);
  if (it == detail.end()) return std::nullopt;
  bool typed = false;
  if constexpr (std::is_same_v<T, std::string>)
    typed = it->is_string();
  else if constexpr (std::is_same_v<T, bool>)
    typed = it->is_boolean();
  else
    typed = it->is_number_integer();
  if (!typed) return std::nullopt;
  return it->get<T>();
}

[[noreturn]] void unknown_name(const nlohmann::json& j, const char* field, const std::string& value,
                               const std::string& known) {
  throw nlohmann::json::other_error::create(
      501, std::string("'") + field + "': unknown name '" + value + "' (known: " + known + ")", &j);
}

}  // namespace

Event event_field(const nlohmann::json& j, const char* field) {
  const std::string name = j.at(field).get<std::string>();
  if (auto event = event_from_name(name)) return *event;
  unknown_name(j, field, name, known_event_names());
}

Category category_field(const nlohmann::json& j, const char* field) {
  const std::string name = j.at(field).get<std::string>();
  if (auto category = category_from_name(name)) return *category;
  unknown_name(j, field, name, known_category_names());
}

std::optional<std::string> TimelineEvent::prefetch_target() const { return detail_value<std::string>(detail, "target"); }
std::optional<std::string> TimelineEvent::prefetch_pass() const { return detail_value<std::string>(detail, "pass"); }
std::optional<std::string> TimelineEvent::skipped() const { return detail_value<std::string>(detail, "skipped"); }
std::optional<std::string> TimelineEvent::state() const { return detail_value<std::string>(detail, "state"); }
bool TimelineEvent::kept() const { return detail_value<bool>(detail, "kept").value_or(false); }
bool TimelineEvent::in_backward() const { return detail_value<bool>(detail, "in_backward").value_or(false); }
bool TimelineEvent::dropped_pending_all_gather() const {
  return detail_value<bool>(detail, "dropped_pending_all_gather").value_or(false);
}
std::optional<int> TimelineEvent::micro_batch() const { return detail_value<int>(detail, "micro_batch"); }
std::optional<std::string> TimelineEvent::nonfinite_param() const { return detail_value<std::string>(detail, "param"); }
std::optional<std::string> TimelineEvent::nonfinite_where() const { return detail_value<std::string>(detail, "where"); }
std::optional<std::string> TimelineEvent::checkpoint_mode() const { return detail_value<std::string>(detail, "mode"); }
TimelineEvent::CheckpointCounts TimelineEvent::checkpoint_counts() const {
  auto count = [this](const char* key) { return detail_value<int64_t>(detail, key).value_or(0); };
  return {count("saves"), count("matmul_like_ran"), count("outputs_kept"), count("bytes_kept"), count("outputs_reused")};
}

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

nlohmann::json kind_totals_to_json(const KindTotals& totals) {
  nlohmann::json kinds = nlohmann::json::object();
  for (int k = 0; k < kBufferKinds; ++k)
    if (totals[k] != 0) kinds[to_string(static_cast<BufferKind>(k))] = totals[k];
  return kinds;
}

KindTotals kind_totals_from_json(const nlohmann::json& j) {
  KindTotals totals{};
  for (const auto& [name, bytes] : j.items()) {
    int k = 0;
    while (k < kBufferKinds && name != to_string(static_cast<BufferKind>(k))) ++k;
    if (k == kBufferKinds) throw nlohmann::json::other_error::create(501, "unknown buffer kind '" + name + "'", &j);
    totals[k] = bytes.get<int64_t>();
  }
  return totals;
}

nlohmann::json TimelineEvent::to_json() const {
  const nlohmann::json kinds = kind_totals_to_json(ledger);
  nlohmann::json j = {{"event", name_of(event)},
                      {"group", group},
                      {"category", name_of(category)},
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
  if (!ledger_by_group.empty()) {
    nlohmann::json groups = nlohmann::json::object();
    for (const auto& [g, totals] : ledger_by_group) groups[g] = kind_totals_to_json(totals);
    j["ledger_by_group"] = std::move(groups);
  }
  if (!detail.empty()) j["detail"] = detail;
  return j;
}

TimelineEvent TimelineEvent::from_json(const nlohmann::json& j) {
  TimelineEvent e;
  e.event = event_field(j);
  e.group = j.at("group").get<std::string>();
  e.category = category_field(j);
  e.rank = j.at("rank").get<int>();
  e.step = j.at("step").get<int>();
  e.at_ns = j.at("at_ns").get<int64_t>();
  e.allocated_bytes = j.at("allocated_bytes").get<int64_t>();
  e.peak_bytes = j.at("peak_bytes").get<int64_t>();
  e.reserved_bytes = j.value("reserved_bytes", int64_t{0});
  e.unsharded_grad_bytes = j.at("unsharded_grad_bytes").get<int64_t>();
  e.ledger = kind_totals_from_json(j.at("ledger"));
  if (j.contains("ledger_by_group"))
    for (const auto& [g, kinds] : j.at("ledger_by_group").items()) e.ledger_by_group[g] = kind_totals_from_json(kinds);
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
                                          Category category) {
  std::vector<TimelineEvent> out;
  for (const auto& e : events)
    if (e.step == step && e.category == category) out.push_back(e);
  return out;
}

std::vector<TimelineEvent> Timeline::events_of_step(int step, Category category) const {
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
