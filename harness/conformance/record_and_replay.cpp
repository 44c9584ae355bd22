// Record on PyTorch, replay natively.
#include "harness/conformance/record_and_replay.h"

#include "harness/backends/registry/registry.h"
#include "harness/reproducer.h"
#include "harness/backends/torch/repro_script.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <stdexcept>

namespace shardfuzz::harness {
namespace {

// The median, the first (lazy-initialising) run of each side left out.
double warm_median(std::vector<double> v) {
  if (v.size() > 1) v.erase(v.begin());
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

void write_torch_program(const Scenario& sc, const std::filesystem::path& dir, const std::string& note) {
  const std::filesystem::path path = dir / (sc.name + ".py");
  std::ofstream file(path);
  file << torch_repro_script(sc, note);
  if (!file) throw std::runtime_error("cannot write " + path.string());
}

std::vector<Scenario> load_conformance_scenarios(const std::vector<std::string>& files, int repeat) {
  std::vector<Scenario> scenarios;
  for (const std::string& file : files) {
    Scenario sc = load_scenario_or_reproducer(file);
    const std::string stem = std::filesystem::path(file).stem().string();
    for (int k = 0; k < std::max(1, repeat); ++k) {
      sc.name = repeat > 1 ? stem + "-" + std::to_string(k) : stem;
      scenarios.push_back(sc);
    }
  }
  return scenarios;
}

RecordedConformance record_and_replay(const std::vector<Scenario>& scenarios, const std::string& python) {
  namespace fs = std::filesystem;
  RecordedConformance out;
  const fs::path traces = fs::temp_directory_path() / ("shardfuzz-conform-" + std::to_string(::getpid()));
  out.traces_dir = traces.string();
  BackendOptions bo;
  bo.name = "torch";
  bo.python = python;
  bo.keep_traces_dir = traces.string();
  std::vector<double> native_seconds, torch_seconds;
  auto torch = make_backend(bo);
  for (const Scenario& sc : scenarios) {
    const RunRecord recorded = torch->run(sc);
    if (!recorded.ok()) {
      out.results.push_back({sc.name + ".json", false, 0, "the recording on torch failed: " + recorded.error});
      continue;
    }
    torch_seconds.push_back(recorded.seconds);
    const auto t0 = std::chrono::steady_clock::now();
    out.results.push_back(replay_trace_file((traces / (sc.name + ".json")).string()));
    native_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  out.native_seconds = warm_median(native_seconds);
  out.torch_seconds = warm_median(torch_seconds);
  return out;
}

}  // namespace shardfuzz::harness
