// Projection of native timelines onto upstream's test events.
#include "harness/expectations/upstream_view.h"

#include <algorithm>

namespace shardfuzz::harness::expectations {
namespace {

using memory::Event;

bool is_marker(const memory::TimelineEvent& e, Event event, int micro_batch) {
  return e.category == memory::Category::Train && e.event == event &&
         (micro_batch < 0 || e.micro_batch().value_or(-1) == micro_batch);
}

// The train events that open and close a phase.
bool opens(const memory::TimelineEvent& e, const PhaseRef& w) {
  if (w.phase == "backward") return is_marker(e, Event::ForwardEnd, w.micro_batch);
  return w.micro_batch == 0 ? is_marker(e, Event::StepBegin, -1) : is_marker(e, Event::BackwardEnd, w.micro_batch - 1);
}

bool closes(const memory::TimelineEvent& e, const PhaseRef& w) {
  return is_marker(e, w.phase == "backward" ? Event::BackwardEnd : Event::ForwardEnd, w.micro_batch);
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
    if (inside && e.category == memory::Category::Fsdp) out.push_back(e);
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
  if (e.event == Event::AllGatherIssued) return UpstreamEvent{"unshard", module, e.state().value_or("")};
  if (e.event == Event::Reshard && !e.kept()) return UpstreamEvent{"reshard", module, e.state().value_or("")};
  if (e.event == Event::PostBackward) return UpstreamEvent{"post_backward", module, "POST_BACKWARD"};
  if (e.event == Event::Prefetch) {
    const std::string target = upstream_module(e.prefetch_target().value_or(""));
    return UpstreamEvent{"prefetch", module, e.skipped() ? target + " (skipped)" : target};
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
