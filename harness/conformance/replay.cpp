// Event-by-event comparison against recorded traces.
#include "harness/conformance/replay.h"

#include "harness/conformance/trace_scenario.h"
#include "harness/scenario/scenario_json.h"
#include "harness/files/json_files.h"
#include "harness/backends/threads/threads_backend.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace shardfuzz::harness {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + v[i];
  return out + "]";
}

std::vector<std::string> strings(const nlohmann::json& j) {
  std::vector<std::string> v = j.get<std::vector<std::string>>();
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

std::string describe(const memory::TimelineEvent& e) {
  std::ostringstream os;
  os << memory::name_of(e.event) << " " << e.group;
  if (!e.detail.empty()) os << " " << e.detail.dump();
  os << " pending=" << join(e.pending_all_gather) << " unsharded=" << join(e.unsharded);
  return os.str();
}

std::string describe_recorded(const nlohmann::json& e) {
  std::ostringstream os;
  os << e.at("event").get<std::string>() << " " << e.at("group").get<std::string>();
  if (e.contains("detail")) os << " " << e.at("detail").dump();
  os << " pending=" << join(strings(e.at("pending_all_gather"))) << " unsharded=" << join(strings(e.at("unsharded")));
  return os.str();
}

ConformanceResult compare_trace(const nlohmann::json& trace, const RunRecord& run) {
  ConformanceResult r;
  if (!run.error.empty()) {
    r.message = "native run failed: " + run.error;
    return r;
  }
  const auto& steps = trace.at("steps");
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const auto& want = steps[s];
    const auto got = run.ranks.at(0).events_of_step(static_cast<int>(s));
    for (std::size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
      const std::string where = "step " + std::to_string(s) + " event " + std::to_string(i);
      if (i >= got.size()) {
        r.message = where + ": native trace ended; expected " + describe_recorded(want[i]);
        return r;
      }
      if (i >= want.size()) {
        r.message = where + ": recorded trace ended; native has " + describe(got[i]);
        return r;
      }
      const auto& w = want[i];
      const auto& g = got[i];
      bool same = w.at("event").get<std::string>() == memory::name_of(g.event) &&
                  w.at("group").get<std::string>() == g.group &&
                  strings(w.at("pending_all_gather")) == g.pending_all_gather &&
                  strings(w.at("unsharded")) == g.unsharded;
      if (same && w.contains("detail"))
        for (const auto& [key, value] : w.at("detail").items())
          same = same && g.detail.contains(key) && g.detail.at(key) == value;
      if (!same) {
        r.message = where + ": expected " + describe_recorded(w) + "\n    native   " + describe(g);
        return r;
      }
      ++r.events;
    }
  }
  r.ok = true;
  return r;
}

ConformanceResult replay_trace_file(const std::string& path) {
  ConformanceResult r;
  r.file = std::filesystem::path(path).filename().string();
  try {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    nlohmann::json trace = nlohmann::json::parse(in);
    if (!trace.at("error").is_null()) {
      r.message = "the recording itself failed: " + trace.at("error").dump();
      return r;
    }
    RunOptions options;
    Scenario scenario;
    if (trace.contains("shardfuzz_scenario")) {
      // Written by an exported reproducer (shardfuzz export --torch): the scenario itself, run the
      // whole step, under the profile torch ran as.
      scenario = scenario_from_json(trace.at("shardfuzz_scenario"));
      scenario.profile = semantics::Profile::named(trace.at("profile").get<std::string>());
      scenario.world_size = trace.at("world_size").get<int>();
      scenario.validate();
    } else {
      options.optimizer_step = false;  // record.py runs forward and backward only
      scenario = scenario_from_trace(trace);
    }
    r = compare_trace(trace, run_threads(scenario, options));
    r.file = std::filesystem::path(path).filename().string();
  } catch (const std::exception& e) {
    r.ok = false;
    r.message = e.what();
  }
  return r;
}

std::vector<ConformanceResult> replay_trace_dir(const std::string& dir) {
  std::vector<ConformanceResult> out;
  for (const auto& f : json_files_in(dir, "conformance")) out.push_back(replay_trace_file(f));
  return out;
}

}  // namespace shardfuzz::harness
