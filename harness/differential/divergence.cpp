// Comparing a native run with a torch run, aspect by aspect.
#include "harness/differential/divergence.h"

#include "harness/conformance/replay.h"
#include "harness/properties/property.h"

#include <algorithm>
#include <cstdlib>
#include <set>

namespace shardfuzz::harness::differential {
namespace {

using memory::Category;
using memory::Event;
using memory::TimelineEvent;

// Detail keys that are values of the run rather than of the schedule: the loss (torch draws its
// own weights and inputs).
bool schedule_key(const std::string& key) { return key != "loss"; }

std::string differing_detail(const TimelineEvent& a, const TimelineEvent& b) {
  for (const auto& [key, value] : a.detail.items())
    if (schedule_key(key) && b.detail.contains(key) && b.detail.at(key) != value) return key;
  return "";
}

std::string bytes_of(const std::map<std::string, int64_t>& m) {
  std::string out = "{";
  for (const auto& [group, bytes] : m) out += (out.size() > 1 ? ", " : "") + group + ": " + std::to_string(bytes) + " B";
  return out + "}";
}

Divergence at_event(const std::string& aspect, int rank, const TimelineEvent& n, const TimelineEvent& t,
                    int index, std::string native, std::string torch, const std::string& what) {
  Divergence d;
  d.aspect = aspect;
  d.rank = rank;
  d.step = n.step;
  d.index = index;
  d.native = std::move(native);
  d.torch = std::move(torch);
  d.identity = aspect + ":" + memory::name_of(n.event) + (n.event == t.event ? "" : "/" + memory::name_of(t.event)) +
               (what.empty() ? "" : "." + what);
  return d;
}

// The first difference between two events at the same place, or nullopt.
std::optional<Divergence> compare_events(int rank, int index, const TimelineEvent& n, const TimelineEvent& t) {
  if (n.event != t.event || n.group != t.group || n.category != t.category)
    return at_event("event", rank, n, t, index, describe(n), describe(t), "");
  if (const std::string key = differing_detail(n, t); !key.empty())
    return at_event("detail", rank, n, t, index, describe(n), describe(t), key);
  if (n.pending_all_gather != t.pending_all_gather)
    return at_event("pending_all_gather", rank, n, t, index, describe(n), describe(t), "");
  if (n.unsharded != t.unsharded) return at_event("unsharded", rank, n, t, index, describe(n), describe(t), "");
  if (n.finished_backward != t.finished_backward)
    return at_event("finished_backward", rank, n, t, index, describe(n), describe(t), "");
  if (n.pending_all_gather_bytes != t.pending_all_gather_bytes)
    return at_event("pending_all_gather_bytes", rank, n, t, index,
                    describe(n) + " bytes=" + bytes_of(n.pending_all_gather_bytes),
                    describe(t) + " bytes=" + bytes_of(t.pending_all_gather_bytes), "");
  return std::nullopt;
}

std::optional<Divergence> compare_timelines(const RunRecord& native, const RunRecord& torch) {
  const std::size_t ranks = std::min(native.ranks.size(), torch.ranks.size());
  for (std::size_t r = 0; r < ranks; ++r) {
    const auto n = compared_events(native.ranks[r]);
    const auto t = compared_events(torch.ranks[r]);
    for (std::size_t i = 0; i < std::max(n.size(), t.size()); ++i) {
      if (i >= n.size() || i >= t.size()) {
        Divergence d;
        d.aspect = "length";
        d.rank = static_cast<int>(r);
        d.index = static_cast<int>(i);
        d.native = i < n.size() ? describe(*n[i]) : "(the timeline ended)";
        d.torch = i < t.size() ? describe(*t[i]) : "(the timeline ended)";
        d.step = (i < n.size() ? n[i] : t[i])->step;
        d.identity = std::string("length:") + (i < n.size() ? "native" : "torch") + " longer";
        return d;
      }
      if (auto d = compare_events(static_cast<int>(r), static_cast<int>(i), *n[i], *t[i])) return d;
    }
  }
  if (native.ranks.size() != torch.ranks.size()) {
    Divergence d;
    d.aspect = "length";
    d.native = std::to_string(native.ranks.size()) + " ranks";
    d.torch = std::to_string(torch.ranks.size()) + " ranks";
    d.identity = "length:ranks";
    return d;
  }
  return std::nullopt;
}

std::optional<Divergence> compare_verdicts(const Scenario& ns, const RunRecord& native, const Scenario& ts,
                                           const RunRecord& torch) {
  const auto nv = check_properties(ns, native);
  const auto tv = check_properties(ts, torch);
  for (const Verdict& n : nv) {
    if (n.skipped) continue;
    const auto t = std::find_if(tv.begin(), tv.end(), [&](const Verdict& v) { return v.property == n.property; });
    if (t == tv.end() || t->skipped || t->ok == n.ok) continue;
    Divergence d;
    d.aspect = "verdict";
    d.native = (n.ok ? "pass" : "FAIL: " + n.message);
    d.torch = (t->ok ? "pass" : "FAIL: " + t->message);
    d.identity = "verdict:" + n.property + (n.ok ? ":torch fails" : ":native fails");
    return d;
  }
  return std::nullopt;
}

// Bytes each post_backward leaves above the one before, per rank (CUDA allocator bytes).
std::vector<std::pair<const TimelineEvent*, int64_t>> layer_growth(const RankRecord& rank) {
  std::vector<std::pair<const TimelineEvent*, int64_t>> out;
  const TimelineEvent* last = nullptr;
  for (const auto& e : rank.timeline) {
    if (e.event == Event::PreBackwardBegin && !last) last = &e;
    if (e.event != Event::PostBackward) continue;
    if (last) out.emplace_back(&e, e.allocated_bytes - last->allocated_bytes);
    last = &e;
  }
  return out;
}

bool both_on_cuda(const RunRecord& native, const RunRecord& torch) {
  return native.device.rfind("cuda", 0) == 0 && torch.observed.allocator && native.observed.allocator &&
         torch.device.rfind("cuda", 0) == 0;
}

// Visits each layer both runs measured: rank, the native and the torch post_backward with their growth.
template <typename Visit>
bool for_each_layer(const RunRecord& native, const RunRecord& torch, Visit&& visit) {
  for (std::size_t r = 0; r < std::min(native.ranks.size(), torch.ranks.size()); ++r) {
    const auto n = layer_growth(native.ranks[r]);
    const auto t = layer_growth(torch.ranks[r]);
    for (std::size_t i = 0; i < std::min(n.size(), t.size()); ++i)
      if (!visit(static_cast<int>(r), n[i], t[i])) return false;
  }
  return true;
}

std::optional<Divergence> compare_layer_bytes(const RunRecord& native, const RunRecord& torch, const Tolerance& tol) {
  if (!both_on_cuda(native, torch)) return std::nullopt;
  std::optional<Divergence> out;
  using Layer = std::pair<const TimelineEvent*, int64_t>;
  for_each_layer(native, torch, [&](int rank, const Layer& n, const Layer& t) {
    const int64_t a = n.second, b = t.second;
    const double allowed =
        std::max(static_cast<double>(tol.bytes), tol.fraction * static_cast<double>(std::max(std::abs(a), std::abs(b))));
    if (static_cast<double>(std::abs(a - b)) <= allowed) return true;
    Divergence d;
    d.aspect = "layer_bytes";
    d.rank = rank;
    d.step = n.first->step;
    d.native = n.first->group + "'s post_backward leaves " + std::to_string(a) + " B above the layer before";
    d.torch = t.first->group + "'s post_backward leaves " + std::to_string(b) + " B above the layer before";
    d.identity = std::string("layer_bytes:") + (a > b ? "native" : "torch") + " holds more";
    out = std::move(d);
    return false;
  });
  return out;
}

}  // namespace

// The native runtime also records a step's begin and the run's teardown (which the torch export
// does not record), and fault and recovery events (which it never plans).
std::vector<const TimelineEvent*> compared_events(const RankRecord& rank) {
  static const std::set<Event> native_only = {Event::NonfiniteGrad, Event::StepBegin, Event::Teardown};
  std::vector<const TimelineEvent*> out;
  for (const auto& e : rank.timeline)
    if ((e.category == Category::Fsdp || e.category == Category::Train) && !native_only.count(e.event))
      out.push_back(&e);
  return out;
}

std::optional<int64_t> largest_layer_bytes_difference(const RunRecord& native, const RunRecord& torch) {
  if (!both_on_cuda(native, torch)) return std::nullopt;
  int64_t largest = 0;
  using Layer = std::pair<const TimelineEvent*, int64_t>;
  for_each_layer(native, torch, [&](int, const Layer& n, const Layer& t) {
    largest = std::max(largest, std::abs(n.second - t.second));
    return true;
  });
  return largest;
}

std::string Divergence::message() const {
  std::string where = aspect == "verdict" || aspect == "liveness" ? aspect
                      : "rank " + std::to_string(rank) + (step >= 0 ? ", step " + std::to_string(step) : "") +
                            (index >= 0 ? ", event " + std::to_string(index) : "") + " (" + aspect + ")";
  return "native and torch diverge at " + where + ":\n    native " + native + "\n    torch  " + torch;
}

nlohmann::json Divergence::to_json() const {
  return {{"aspect", aspect}, {"rank", rank}, {"step", step}, {"index", index},
          {"native", native}, {"torch", torch}, {"identity", identity}};
}

std::optional<Divergence> first_divergence(const Scenario& native_scenario, const RunRecord& native,
                                           const Scenario& torch_scenario, const RunRecord& torch,
                                           const Tolerance& tolerance) {
  if (native.ok() != torch.ok()) {
    Divergence d;
    d.aspect = "liveness";
    d.native = native.ok() ? "completed" : "failed: " + without_backtrace(native.error);
    d.torch = torch.ok() ? "completed" : "failed (" + torch.error_kind + "): " + without_backtrace(torch.error);
    d.identity = std::string("liveness:") + (native.ok() ? "torch" : "native") + " fails";
    return d;
  }
  if (!native.ok()) return std::nullopt;  // both failed: the same verdict on both sides
  if (auto d = compare_timelines(native, torch)) return d;
  if (auto d = compare_verdicts(native_scenario, native, torch_scenario, torch)) return d;
  return compare_layer_bytes(native, torch, tolerance);
}

}  // namespace shardfuzz::harness::differential
