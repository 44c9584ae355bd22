// A scenario's schedule of its rank threads (threads backend; runtime/comm/schedule.h) as plain
// data: a seed and the switches that override its decisions. Part of the scenario, so generated,
// shrunk (fuzz/shrink/edits/schedule.cpp) and stored in reproducers like everything else.
#pragma once

#include "harness/scenario/fields.h"
#include "harness/scenario/scenario_limits.h"
#include "runtime/comm/schedule.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace shardfuzz::harness {

// The order the threads backend runs rank threads in (comm/schedule.h): one at a time, handed over
// at collective boundaries, deadlines on the world's own clock, so a run replays exactly. Absent:
// the canonical schedule (seed 0, no switches). The process, nccl and torch backends ignore it.
struct ScheduleSwitch {
  int64_t decision = 0;   // the run's decision number (a point where more than one rank could run)
  int64_t candidate = 1;  // which of them runs: 0 would be "the rank that handed over, or the next"
};
struct ScheduleSpec {
  uint64_t seed = 0;  // 0: every decision not in `switches` takes candidate 0
  std::vector<ScheduleSwitch> switches;
  comm::Schedule to_comm() const;
  // The schedule that replays `record` decision for decision (seed 0, the switches it took);
  // nullopt (canonical) when it took none.
  static std::optional<ScheduleSpec> replaying(const comm::ScheduleRecord& record);
};

template <>
struct Fields<ScheduleSwitch> {
  static constexpr const char* what = "a schedule switch";
  template <class R, class V>
  static void visit(R& s, V& v) {
    v("decision", s.decision, allow::Between{0, ScenarioLimits::kMaxScheduleDecision},
      "the run's decision number: the points where more than one rank thread could run, counted from 0");
    v("candidate", s.candidate, allow::Between{1, ScenarioLimits::kMaxWorld},
      "which of them runs (modulo their number), in order from the rank that handed over, then the ranks after it");
  }
};

template <>
struct Fields<ScheduleSpec> {
  static constexpr const char* what = "a schedule";
  template <class R, class V>
  static void visit(R& s, V& v) {
    v("seed", s.seed, allow::Any{},
      "`0`: the canonical order (a rank runs until it blocks, then the next rank after it); otherwise decisions not in "
      "`switches` are drawn from (seed, decision)");
    v("switches", s.switches, allow::AtMost{ScenarioLimits::kMaxScheduleSwitches, "switches"},
      "decisions that take another candidate; a run's record lists every one it took, so a reproducer replays it exactly");
  }
};

}  // namespace shardfuzz::harness
