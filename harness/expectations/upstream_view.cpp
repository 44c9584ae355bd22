// Projection of native timelines onto upstream's test events.
#include "harness/expectations/upstream_view.h"

#include <algorithm>

namespace shardfuzz::harness::expectations {
namespace {

int micro_batch_of(const memory::TimelineEvent& e) { return e.detail.value("micro_batch", -1); }

bool is_marker(const memory::TimelineEvent& e, const char* name, int micro_batch) {
  return e.category == "train" && e.event == name && (micro_batch < 0 || micro_batch_of(e) == micro_batch);
}

// The train events that open and close a phase.
bool opens(const memory::TimelineEvent& e, const PhaseRef& w) {
  if (w.phase == "backward") return is_marker(e, "forward_end", w.micro_batch);
  return w.micro_batch == 0 ? is_marker(e, "step_begin", -1) : is_marker(e, "backward_end", w.micro_batch - 1);
}

bool closes(const memory::TimelineEvent& e, const PhaseRef& w) {
  return is_marker(e, w.phase == "backward" ? "backward_end" : "forward_end", w.micro_batch);
}

}  // namespace

std::string UpstreamEvent::describe() const {
  if (kind == "prefetch") return "(prefetch, " + (module.empty() ? "\"\"" : module) + " -> " + state + ")";
  return "(" + kind + ", " + (module.empty() ? "\"\"" : module) + ", " + state + ")";
}

std::string PhaseRef::label() const {
  return "step " + std::to_string(step) + " " + phase + (micro_batch ? ", micro-batch " + std::to_string(micro_batch) : "");
}

std::vector<memory::TimelineEvent> phase_events(const RankRecord& rank, const PhaseRef& where) {
  std::vector<memory::TimelineEvent> out;
  bool inside = false;
  for (const auto& e : rank.timeline) {
    if (e.step != where.step) continue;
    if (inside && closes(e, where)) return out;
    if (!inside && opens(e, where)) {
      inside = true;
      continue;
    }
    if (inside && e.category == "fsdp") out.push_back(e);
  }
  return out;
}

const memory::TimelineEvent* phase_end(const RankRecord& rank, const PhaseRef& where) {
  for (const auto& e : rank.timeline)
    if (e.step == where.step && closes(e, where)) return &e;
  return nullptr;
}

std::string upstream_module(const std::string& group) { return group == "root" ? "" : group; }

std::optional<UpstreamEvent> to_upstream(const memory::TimelineEvent& e) {
  const std::string module = upstream_module(e.group);
  if (e.event == "all_gather_issued") return UpstreamEvent{"unshard", module, e.detail.value("state", "")};
  if (e.event == "reshard" && !e.detail.value("kept", false))
    return UpstreamEvent{"reshard", module, e.detail.value("state", "")};
  if (e.event == "post_backward") return UpstreamEvent{"post_backward", module, "POST_BACKWARD"};
  if (e.event == "prefetch") {
    const std::string target = upstream_module(e.detail.value("target", ""));
    return UpstreamEvent{"prefetch", module, e.detail.contains("skipped") ? target + " (skipped)" : target};
  }
  return std::nullopt;
}

std::vector<ProjectedEvent> upstream_view(const std::vector<memory::TimelineEvent>& events,
                                          const std::vector<std::string>& record) {
  std::vector<ProjectedEvent> out;
  for (std::size_t i = 0; i < events.size(); ++i) {
    std::optional<UpstreamEvent> u = to_upstream(events[i]);
    if (u && std::find(record.begin(), record.end(), u->kind) != record.end()) out.push_back({*u, i});
  }
  return out;
}

}  // namespace shardfuzz::harness::expectations
