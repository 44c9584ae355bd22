// The buffer-lifetime model (harness/lifetimes) against ground truth: every recorded torch trace
// (its pending all-gathers and unsharded groups after each event), and hand-written timelines where
// a buffer is held longer than FSDP2 holds it (a finding under strict, while the torch-2.9 leak's
// all-gather is what the model expects under torch-2.9).
#include "harness/conformance/trace_scenario.h"
#include "harness/files/json_files.h"
#include "harness/lifetimes/buffer_model.h"
#include "harness/properties/property.h"
#include "runtime/semantics/profile.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

namespace shardfuzz::harness {
namespace {

using memory::BufferKind;
using memory::Event;
using memory::TimelineEvent;

std::string trace_dir() {
  if (const char* env = std::getenv("SHARDFUZZ_CONFORMANCE_DIR")) return env;
  return SHARDFUZZ_CONFORMANCE_DIR;
}

TimelineEvent recorded_event(const nlohmann::json& j, int step) {
  TimelineEvent e;
  e.event = memory::event_field(j);
  e.category = memory::category_of(e.event);
  e.group = j.value("group", "");
  e.step = step;
  if (j.contains("detail")) e.detail = j.at("detail");
  return e;
}

// What a ledger would book if it held exactly the recorded sets: the model's own bytes for every
// other kind, so that only the pending all-gathers and unsharded parameters are compared.
std::map<std::string, memory::KindTotals> booked_as_recorded(const lifetimes::BufferModel& model,
                                                            const std::map<std::string, lifetimes::GroupSizes>& sizes,
                                                            const nlohmann::json& e) {
  auto booked = model.expected();
  const auto pending = e.value("pending_all_gather", std::vector<std::string>{});
  const auto unsharded = e.value("unsharded", std::vector<std::string>{});
  for (const auto& [g, size] : sizes) {
    auto& kinds = booked[g];
    const bool p = std::find(pending.begin(), pending.end(), g) != pending.end();
    const bool u = std::find(unsharded.begin(), unsharded.end(), g) != unsharded.end();
    if (kinds[static_cast<std::size_t>(BufferKind::PendingAllGather)] > 0 || !p)
      kinds[static_cast<std::size_t>(BufferKind::PendingAllGather)] = p ? size.all_gather : 0;
    kinds[static_cast<std::size_t>(BufferKind::UnshardedParam)] = u ? size.unsharded : 0;
  }
  return booked;
}

// "" when the model's sets equal the trace's after every event.
std::string judge_trace(const std::string& path) {
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  if (!trace.value("error", nlohmann::json()).is_null()) return "";  // a run torch failed: nothing to step
  const Scenario sc = scenario_from_trace(trace);
  std::map<std::string, lifetimes::GroupSizes> sizes;
  for (const auto& step : trace.at("steps"))
    for (const auto& e : step)
      if (const std::string g = e.value("group", ""); !g.empty())
        sizes[g] = {1, 100, 100, 0, 0, 0, sc.world_size, lifetimes::keeps_after_forward(sc, g)};
  lifetimes::BufferModel model(sizes, lifetimes::ModelSwitches::of(sc, sizes));
  int step = 0;
  for (const auto& events : trace.at("steps")) {
    std::size_t i = 0;
    for (const auto& j : events) {
      model.step(recorded_event(j, step));
      const std::string m = model.compare_and_learn(booked_as_recorded(model, sizes, j));
      const auto pending = j.value("pending_all_gather", std::vector<std::string>{});
      if (!m.empty() || model.pending_groups() != pending)
        return "step " + std::to_string(step + 1) + " event #" + std::to_string(i) + " " + j.dump() + ": " +
               (m.empty() ? "the model's pending all-gathers differ" : m);
      ++i;
    }
    TimelineEvent end;  // a recorded step ends with its backward (one micro-batch)
    end.event = Event::BackwardEnd;
    end.category = memory::Category::Train;
    model.step(end);
    ++step;
  }
  return "";
}

TEST(Lifetimes, AgreesWithEveryRecordedTorchTrace) {
  ASSERT_TRUE(std::filesystem::is_directory(trace_dir()));
  int traces = 0;
  for (const auto& f : json_files_in(trace_dir(), "conformance")) {
    ++traces;
    EXPECT_EQ(judge_trace(f), "") << f;
  }
  EXPECT_GE(traces, 72);
}

// One group "b" (world 2, 400 unsharded bytes): forward, backward, and the ledger's view of it.
struct Timeline {
  std::vector<TimelineEvent> events;
  memory::KindTotals held{};
  TimelineEvent& add(Event event, const std::string& group, nlohmann::json detail = nlohmann::json::object()) {
    TimelineEvent e;
    e.event = event;
    e.category = memory::category_of(event);
    e.group = group;
    e.detail = std::move(detail);
    e.ledger_by_group["b"] = held;
    events.push_back(e);
    return events.back();
  }
};

lifetimes::BufferModel one_group(const semantics::Profile& profile) {
  lifetimes::GroupSizes b{100, 400, 400, 100, 400, 200, 2, false};
  return lifetimes::BufferModel({{"b", b}}, lifetimes::ModelSwitches::of(profile));
}

std::string run(lifetimes::BufferModel model, const Timeline& t) {
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    model.step(t.events[i]);
    if (std::string m = model.compare_and_learn(t.events[i].ledger_by_group); !m.empty())
      return "#" + std::to_string(i) + " " + memory::name_of(t.events[i].event) + ": " + m;
  }
  return "";
}

Timeline forward_of_b(bool keep_unsharded_after_reshard) {
  Timeline t;
  t.held[static_cast<std::size_t>(BufferKind::ShardedParam)] = 100;
  t.add(Event::PreForward, "b");
  t.held[static_cast<std::size_t>(BufferKind::PendingAllGather)] = 400;
  t.add(Event::AllGatherIssued, "b", {{"state", "FORWARD"}});
  t.held[static_cast<std::size_t>(BufferKind::PendingAllGather)] = 0;
  t.held[static_cast<std::size_t>(BufferKind::DeferredAllGather)] = 400;
  t.held[static_cast<std::size_t>(BufferKind::UnshardedParam)] = 400;
  if (!keep_unsharded_after_reshard) t.held[static_cast<std::size_t>(BufferKind::UnshardedParam)] = 0;
  t.add(Event::Reshard, "b", {{"state", "FORWARD"}});
  t.add(Event::PostForward, "b");
  t.held[static_cast<std::size_t>(BufferKind::DeferredAllGather)] = 0;
  t.add(Event::ForwardEnd, "", {{"micro_batch", 0}});
  return t;
}

TEST(Lifetimes, AForwardThatFreesWhatFsdp2FreesAgrees) {
  EXPECT_EQ(run(one_group(semantics::Profile::named("strict")), forward_of_b(false)), "");
}

TEST(Lifetimes, AnUnshardedBufferBookedPastItsReshardIsNamed) {
  const std::string m = run(one_group(semantics::Profile::named("strict")), forward_of_b(true));
  EXPECT_NE(m.find("#2 reshard: group b unsharded_param: the ledger books 400 bytes, FSDP2 holds 0 (freed by its reshard)"),
            std::string::npos) << m;
}

TEST(Lifetimes, AReduceScatterInputKeptPastTheNextReduceIsNamed) {
  lifetimes::GroupSizes g{100, 400, 400, 100, 400, 200, 2, false};
  lifetimes::BufferModel model({{"a", g}, {"b", g}}, lifetimes::ModelSwitches::of(semantics::Profile::named("strict")));
  Timeline t;
  auto at = [&](const std::string& group, BufferKind k, int64_t v) { t.events.back().ledger_by_group[group][static_cast<std::size_t>(k)] = v; };
  for (const char* group : {"b", "a"}) {
    t.add(Event::PostBackward, group);
    t.events.back().ledger_by_group.clear();
    at("a", BufferKind::ShardedParam, 100);
    at("b", BufferKind::ShardedParam, 100);
    at("b", BufferKind::ReduceScatterInput, 400);  // b's input still alive at a's reduce: K = 2
    at("b", BufferKind::Grad, 100);
    if (std::string(group) == "a") at("a", BufferKind::ReduceScatterInput, 400), at("a", BufferKind::Grad, 100);
  }
  const std::string m = run(model, t);
  EXPECT_NE(m.find("#1 post_backward: group b reduce_scatter_input: the ledger books 400 bytes, FSDP2 holds 0"),
            std::string::npos) << m;
}

}  // namespace
}  // namespace shardfuzz::harness
