// Property: every runtime buffer the ledger books, by group and kind, is one FSDP2 holds at that
// moment, with its bytes, at every event of every rank: forward, backward, recompute, optimizer step
// and zero_grad. The expectation is harness/lifetimes' model of buffer lifetimes, stepped by the
// rank's own timeline; a buffer held longer than FSDP2 holds it fails here even when the ledger
// books it and it is the same every step. A recovered attempt (the events recovery kept apart) is
// stepped on a copy of the model, and at its "recovered" event the ledger must equal the step's
// start again: what a never-faulted run holds at that step boundary.
#include "harness/lifetimes/buffer_model.h"
#include "harness/properties/property.h"

namespace shardfuzz::harness {
namespace {

constexpr const char* kName = "buffers_live_as_fsdp2_holds";

std::string where(const memory::TimelineEvent& e, std::size_t index, const char* attempt = "") {
  std::string at = "rank " + std::to_string(e.rank) + " step " + std::to_string(e.step + 1) + attempt + ", event #" +
                   std::to_string(index) + " " + memory::name_of(e.event);
  if (!e.group.empty()) at += " of " + e.group;
  return at;
}

// One failed attempt of the step `model` begins: its events on a copy of the model; at its
// "recovered" event the ledger equals the step's start (plus what FSDP2 keeps across steps that the
// attempt created), which `model` becomes. "" when it does.
std::string judge_recovery(lifetimes::BufferModel& model, const RecoveryRecord& rec) {
  lifetimes::BufferModel attempt = model;
  for (const memory::TimelineEvent& e : rec.events) attempt.step(e);
  model = model.after_recovery(attempt);
  for (std::size_t i = 0; i < rec.events.size(); ++i)
    if (rec.events[i].event == memory::Event::Recovered)
      if (std::string m = model.compare_and_learn(rec.events[i].ledger_by_group); !m.empty())
        return where(rec.events[i], i, " (a failed attempt)") + ": the reset did not return to the step's start: " + m;
  return "";
}

std::string judge_rank(const Scenario& sc, const RankRecord& r) {
  auto sizes = lifetimes::group_sizes(sc, r);
  const auto switches = lifetimes::ModelSwitches::of(sc, sizes);
  lifetimes::BufferModel model(std::move(sizes), switches);
  for (std::size_t i = 0; i < r.timeline.size(); ++i) {
    const memory::TimelineEvent& e = r.timeline[i];
    if (e.event == memory::Event::Teardown) break;  // the model, optimizer and runtime are being destroyed
    if (e.event == memory::Event::StepBegin)
      for (const RecoveryRecord& rec : r.recoveries)
        if (rec.step == e.step)
          if (std::string m = judge_recovery(model, rec); !m.empty()) return m;
    model.step(e);
    if (std::string m = model.compare_and_learn(e.ledger_by_group); !m.empty()) return where(e, i) + ": " + m;
  }
  return "";
}

}  // namespace

Verdict check_buffers_live_as_fsdp2_holds(const Scenario& sc, const RunRecord& run) {
  if (!run.observed.ledger) return {kName, true, true, "the " + run.backend + " backend keeps no ledger"};
  for (const RankRecord& r : run.ranks)
    if (std::string m = judge_rank(sc, r); !m.empty()) return {kName, false, false, m};
  return {kName, true, false, "every booked buffer is one FSDP2 holds, at every event"};
}

}  // namespace shardfuzz::harness
