// The native timeline in upstream's vocabulary: the events PyTorch's FSDP2 tests record by patching
// FSDPParamGroup.unshard / reshard / post_backward (test_fully_shard_comm.py), cut into the phases
// those tests assert on (one forward, one backward, per micro-batch).
#pragma once

#include "harness/run/run_record.h"
#include "runtime/memory/timeline.h"

#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::harness::expectations {

// ("unshard", "layers.1", "FORWARD"), ("reshard", "", "POST_BACKWARD"), ("post_backward", "layers.0",
// "POST_BACKWARD"); for ("prefetch", issuer, target) `state` holds the target. Module "" is the root.
struct UpstreamEvent {
  std::string kind;
  std::string module;
  std::string state;
  bool operator==(const UpstreamEvent& o) const { return kind == o.kind && module == o.module && state == o.state; }
  std::string describe() const;
};

// One phase of a step: "forward" (from the step's start, or the previous micro-batch's backward, to
// its forward_end) or "backward" (from forward_end to backward_end) of micro-batch `micro_batch`.
struct PhaseRef {
  int step = 0;
  std::string phase = "forward";
  int micro_batch = 0;
  std::string label() const;  // "step 0 backward" (", micro-batch 1" when not 0)
};

// The rank's scheduler events of the phase, in order, and the train event that ends it (nullptr
// when the rank never reached it).
std::vector<memory::TimelineEvent> phase_events(const RankRecord& rank, const PhaseRef& where);
const memory::TimelineEvent* phase_end(const RankRecord& rank, const PhaseRef& where);

// What upstream's recorders see of one native event: all_gather_issued is an unshard that was no
// no-op, a reshard that kept the parameters is not recorded. Empty for every other event.
std::optional<UpstreamEvent> to_upstream(const memory::TimelineEvent& e);
// Upstream's name of a native group ("root" is "").
std::string upstream_module(const std::string& group);

// The projection of `events` onto the kinds in `record` (what the upstream test patched), with the
// index of each one's native event.
struct ProjectedEvent {
  UpstreamEvent event;
  std::size_t native_index = 0;
};
std::vector<ProjectedEvent> upstream_view(const std::vector<memory::TimelineEvent>& events,
                                          const std::vector<std::string>& record);

}  // namespace shardfuzz::harness::expectations
