// The first place where two runs of one scenario disagree: the native runtime under the profile
// that models a torch, and that torch itself (the torch backend). Compared, in this order:
//   1. liveness: one side failed (an exception, a hang, a crash) and the other did not;
//   2. every rank's timeline, event for event (step phases included): the event, its group, the
//      detail keys both sides record, and after it the pending all-gathers (with their bytes), the
//      unsharded groups and the groups that finished backward;
//   3. the verdict of every property both sides could judge;
//   4. on CUDA, where both sides ran there: the allocator bytes each layer's backward leaves
//      behind (at each post_backward, against the one before), within a stated tolerance.
// Its identity (what a shrink must keep) is the aspect and the event names, not the groups: a
// shrink renames blocks.
#pragma once

#include "harness/run/run_record.h"
#include "harness/scenario/scenario.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::harness::differential {

struct Tolerance {
  // Per-layer allocator bytes on CUDA: |native - torch| <= max(bytes, fraction * max(|native|, |torch|)).
  int64_t bytes = 64 * 1024;
  double fraction = 0.02;
};

struct Divergence {
  // "liveness", "event", "detail", "pending_all_gather", "pending_all_gather_bytes", "unsharded",
  // "finished_backward", "length", "verdict", "layer_bytes"
  std::string aspect;
  int rank = 0;
  int step = -1;   // -1: not about one step (liveness, verdict)
  int index = -1;  // the event's index in the rank's compared_events (the timeline aspects)
  std::string native;  // that side, described
  std::string torch;
  std::string identity;  // "event:post_forward/reshard", "verdict:per_layer_return_to_baseline", ...
  // One paragraph: where, and both sides.
  std::string message() const;
  nlohmann::json to_json() const;
};

// The events of a rank's timeline that both sides record and are compared: FSDP's transitions and
// the training step's phases (not the native runtime's step_begin and teardown, its fault and
// recovery events, nor non-finite gradient reports). A Divergence's index counts these.
std::vector<const memory::TimelineEvent*> compared_events(const RankRecord& rank);

// The largest per-layer difference in CUDA allocator bytes between the two runs (what the
// tolerance is held against), or nullopt when they cannot be compared: not both on CUDA with the
// allocator observed.
std::optional<int64_t> largest_layer_bytes_difference(const RunRecord& native, const RunRecord& torch);

// The first divergence between `native` (a native run of `native_scenario`) and `torch` (a torch
// run of `torch_scenario`: the same scenario, under the profile torch ran as), or nullopt.
std::optional<Divergence> first_divergence(const Scenario& native_scenario, const RunRecord& native,
                                           const Scenario& torch_scenario, const RunRecord& torch,
                                           const Tolerance& tolerance = {});

}  // namespace shardfuzz::harness::differential
