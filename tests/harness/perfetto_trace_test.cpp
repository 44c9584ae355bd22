// The Perfetto trace of a run: every event carries the trace-event format's required fields for
// its phase; complete slices nest on each thread; every async all-gather begins and ends once;
// each rank has its process, the train thread and one thread per group, forward and backward
// slices, counters; a recovered step's failed run is closed by its "recovered" instant.
#include "harness/report/perfetto_trace.h"
#include "harness/scenario/standard_scenarios.h"
#include "harness/backends/threads/threads_backend.h"
#include "tests/harness/fault_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace shardfuzz::harness {
namespace {

using json = nlohmann::json;
using namespace testing_support;

// The trace-event format's required fields (Chrome's "Trace Event Format" document): every event
// has name, ph, pid and tid; all but metadata a numeric ts; X a non-negative dur; b/e a cat and an
// id; C numeric args; M args.name (or args.sort_index). Returns the first problem, or "".
std::string invalid_event(const json& e) {
  for (const char* key : {"name", "ph"})
    if (!e.contains(key) || !e[key].is_string()) return std::string("missing string ") + key;
  for (const char* key : {"pid", "tid"})
    if (!e.contains(key) || !e[key].is_number_integer()) return std::string("missing integer ") + key;
  const std::string ph = e["ph"];
  static const std::set<std::string> phases = {"X", "B", "E", "i", "b", "e", "C", "M"};
  if (!phases.count(ph)) return "unknown phase " + ph;
  if (ph != "M" && (!e.contains("ts") || !e["ts"].is_number())) return "missing numeric ts";
  if (ph == "X" && (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0)) return "bad dur";
  if ((ph == "b" || ph == "e") && (!e.contains("cat") || !e.contains("id"))) return "async event without cat or id";
  if (ph == "C") {
    if (!e.contains("args") || !e["args"].is_object() || e["args"].empty()) return "counter without args";
    for (const auto& [k, v] : e["args"].items())
      if (!v.is_number()) return "counter value " + k + " is not a number";
  }
  if (ph == "M" && (!e.contains("args") || !(e["args"].contains("name") || e["args"].contains("sort_index"))))
    return "metadata without args.name";
  return "";
}

void expect_valid(const json& trace) {
  ASSERT_TRUE(trace.contains("traceEvents") && trace["traceEvents"].is_array());
  std::map<std::tuple<int, int>, std::vector<std::pair<double, double>>> slices;  // (pid, tid) -> [begin, end)
  std::map<int64_t, int> async_open;
  for (const json& e : trace["traceEvents"]) {
    const std::string problem = invalid_event(e);
    ASSERT_EQ(problem, "") << e.dump();
    const std::string ph = e["ph"];
    if (ph == "X") {
      const double b = e["ts"], d = e["dur"];
      slices[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back({b, b + d});
    }
    if (ph == "b") ++async_open[e["id"].get<int64_t>()];
    if (ph == "e") --async_open[e["id"].get<int64_t>()];
  }
  for (const auto& [id, open] : async_open) EXPECT_EQ(open, 0) << "all-gather " << id << " begins and ends once";
  // Slices on one thread are disjoint or nested (what the viewers need to draw them).
  for (auto& [track, spans] : slices)
    for (std::size_t i = 0; i < spans.size(); ++i)
      for (std::size_t j = i + 1; j < spans.size(); ++j) {
        const auto [a0, a1] = spans[i];
        const auto [b0, b1] = spans[j];
        // ts + dur rounds: a slice ending where the next begins may end 1e-11 us past it.
        constexpr double eps = 1e-3;  // microseconds
        const bool disjoint = a1 <= b0 + eps || b1 <= a0 + eps;
        const bool nested = (a0 <= b0 + eps && b1 <= a1 + eps) || (b0 <= a0 + eps && a1 <= b1 + eps);
        EXPECT_TRUE(disjoint || nested) << "pid " << std::get<0>(track) << " tid " << std::get<1>(track) << ": ["
                                        << a0 << ", " << a1 << ") overlaps [" << b0 << ", " << b1 << ")";
      }
}

std::multiset<std::string> names(const json& trace, int pid, const std::string& ph) {
  std::multiset<std::string> out;
  for (const json& e : trace["traceEvents"])
    if (e["pid"] == pid && e["ph"] == ph) out.insert(e["name"].get<std::string>());
  return out;
}

TEST(PerfettoTrace, TheStandardSmallScenarioHasEveryTrackAndValidEvents) {
  const Scenario sc = standard_small_scenario();
  const RunRecord run = run_threads(sc);
  ASSERT_TRUE(run.ok()) << run.error;
  const json trace = perfetto_trace(sc, run);
  expect_valid(trace);
  for (int r = 0; r < sc.world_size; ++r) {
    const auto slices = names(trace, r, "X");
    EXPECT_EQ(slices.count("step 1"), 1u) << "rank " << r;
    EXPECT_EQ(slices.count("step 2"), 1u);
    EXPECT_GE(slices.count("forward"), 2u * 4);  // every block, every step
    EXPECT_GE(slices.count("backward"), 2u * 4);
    EXPECT_GE(slices.count("recompute"), 2u * 4) << "full AC recomputes every block in backward";
    const auto all_gathers = names(trace, r, "b");
    EXPECT_GE(all_gathers.size(), 8u) << "all-gathers";
    EXPECT_TRUE(std::any_of(all_gathers.begin(), all_gathers.end(),
                            [](const std::string& n) { return n.rfind("prefetch all_gather ", 0) == 0; }))
        << "torch-2.11's implicit backward prefetch shows as prefetch slices";
    const auto counters = names(trace, r, "C");
    EXPECT_TRUE(counters.count("allocator bytes") && counters.count("ledger bytes") &&
                counters.count("pending all-gather bytes"));
    const auto meta = names(trace, r, "M");
    EXPECT_EQ(meta.count("process_name"), 1u);
    EXPECT_GE(meta.count("thread_name"), 1u + 4 + 4) << "train, the blocks and their experts";
  }
}

TEST(PerfettoTrace, ARecoveredStepShowsItsFailedRunClosedByRecovered) {
  Scenario sc = small();
  sc.steps = 2;
  sc = with_exception(sc, 1, "layers.0", "backward", 1);
  const RunRecord run = run_threads(sc, short_deadline());
  ASSERT_TRUE(run.ok()) << run.error;
  const json trace = perfetto_trace(sc, run);
  expect_valid(trace);
  for (int r = 0; r < sc.world_size; ++r) {
    EXPECT_EQ(names(trace, r, "i").count("recovered"), 1u) << "rank " << r;
    EXPECT_EQ(names(trace, r, "X").count("step 2"), 2u) << "the failed run and the one that completed";
    int failed = 0;
    for (const json& e : trace["traceEvents"])
      if (e["pid"] == r && e["ph"] == "X" && e["args"].value("failed_run", false)) ++failed;
    EXPECT_GE(failed, 1);
  }
}

}  // namespace
}  // namespace shardfuzz::harness
