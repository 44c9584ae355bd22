// `shardfuzz conform --traces DIR`: one line per trace, the first divergence under each failure,
// and a summary line that CI greps.
#include "fuzz/cli/conform_command.h"

#include "fuzz/cli/exit_codes.h"
#include "fuzz/gen/generate.h"
#include "harness/conformance/replay.h"
#include "harness/reproducer.h"
#include "harness/torch/embedded_python.h"
#include "harness/torch/repro_script.h"

#include <unistd.h>
#include "harness/json_files.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <filesystem>
#include <sstream>
#include <system_error>

namespace shardfuzz::cli {
namespace {

constexpr const char* kDefaultTraces = "../shared/conformance/traces";

// Every line of a (possibly multi-line) divergence message, indented under its FAIL line.
void print_indented(std::ostream& out, const std::string& message) {
  std::istringstream lines(message);
  std::string line;
  while (std::getline(lines, line)) out << "    " << line << "\n";
}

std::size_t count_traces(const std::filesystem::path& dir) { return harness::json_files_in(dir.string(), "conform").size(); }

}  // namespace

std::string default_traces_dir() {
  std::error_code ec;
  return std::filesystem::is_directory(kDefaultTraces, ec) ? kDefaultTraces : "";
}

CLI::App* add_conform_command(CLI::App& app, ConformOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "conform", "Replay recorded PyTorch FSDP2 traces on the native runtime, event for event");
  cmd->add_option("--traces", options.traces_dir,
                  "Folder of recorded traces (SCENARIO.wWORLD.PROFILE.json). Default: "
                  "../shared/conformance/traces relative to the current directory, if it exists.")
      ->option_text("DIR");
  cmd->add_option("--emit", options.emit_dir,
                  "Write --cases generated scenarios as PyTorch reproducers (case-K.py) into DIR instead: "
                  "record them with harness/torch/run_batch.py, then replay the recordings with --traces")
      ->option_text("DIR");
  cmd->add_option("--cases", options.cases, "with --emit: how many scenarios")->capture_default_str();
  cmd->add_option("--seed", options.seed, "with --emit: generator seed")->capture_default_str();
  cmd->add_option("--world", options.world, "with --emit: the world size (1-8)")->capture_default_str();
  cmd->add_option("--profile", options.profile, "with --emit: torch-2.11 (as installed) or torch-2.9 (pre-fix)")
      ->capture_default_str();
  cmd->add_option("--torch-python", options.torch_python,
                  "Emit, record on PyTorch with this python (torch installed), replay: one command, with the "
                  "per-scenario time of both sides")
      ->option_text("PYTHON");
  cmd->add_option("--scenario", options.scenario_file,
                  "with --torch-python: this scenario (or reproducer) instead of generated ones");
  cmd->add_option("--repeat", options.repeat, "with --scenario: how many times (warm timing)")->capture_default_str();
  cmd->footer(std::string(
                  "Each trace (*.json, by name) runs under its own profile; rank 0's events, their "
                  "groups, and the pending all-gathers and unsharded groups after each must match "
                  "the recording. Prints PASS/FAIL per trace, the first divergence under a FAIL, "
                  "then 'conform: N passed, M failed'.\n\n") +
              kExitCodesHelp);
  return cmd;
}

namespace {

bool write_program(const std::filesystem::path& path, const std::string& text, std::ostream& err) {
  std::ofstream file(path);
  file << text;
  if (!file) err << "shardfuzz conform: cannot write " << path.string() << "\n";
  return static_cast<bool>(file);
}

// `cases` generated scenarios as case-K.py in `dir`.
int emit_cases(const ConformOptions& o, const std::string& dir, std::ostream& out, std::ostream& err) {
  if (o.cases < 1 || o.world < 1 || o.world > 8 || (o.profile != "torch-2.11" && o.profile != "torch-2.9")) {
    err << "shardfuzz conform --emit: --cases must be >= 1, --world 1-8, --profile torch-2.11 or torch-2.9\n";
    return kExitUsage;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    err << "shardfuzz conform --emit: cannot create " << dir << ": " << ec.message() << "\n";
    return kExitUsage;
  }
  fuzz::GenConfig config;
  config.world = o.world;
  config.profile = o.profile;
  int written = 0, skipped = 0;
  for (uint64_t k = 0; written < o.cases && k < static_cast<uint64_t>(o.cases) * 10; ++k) {
    harness::Scenario sc = fuzz::generate(config, o.seed * 1000003ULL + k, static_cast<int>(10 + (k * 37) % 91));
    if (sc.expert_parallel) {  // not exportable yet
      ++skipped;
      continue;
    }
    char name[32];
    std::snprintf(name, sizeof name, "case-%04d", written);
    sc.name = name;
    const std::filesystem::path path = std::filesystem::path(dir) / (std::string(name) + ".py");
    if (!write_program(path, harness::torch_repro_script(sc, "Generated by shardfuzz conform --emit (seed " +
                                                                 std::to_string(o.seed) + ")"),
                       err))
      return kExitUsage;
    ++written;
  }
  out << "conform: wrote " << written << " reproducers to " << dir << " (" << skipped
      << " expert-parallel draws skipped: not exportable yet)\n";
  return kExitOk;
}

// PASS/FAIL per result, the first divergence under each FAIL, the summary line CI greps.
int print_results(const std::vector<harness::ConformanceResult>& results, std::ostream& out) {
  std::size_t passed = 0;
  std::size_t failed = 0;
  for (const auto& r : results) {
    if (r.ok) {
      ++passed;
      out << "PASS " << r.file << " (" << r.events << " events)\n";
    } else {
      ++failed;
      out << "FAIL " << r.file << "\n";
      print_indented(out, r.message);
    }
  }
  out << "conform: " << passed << " passed, " << failed << " failed" << std::endl;
  return failed == 0 ? kExitOk : kExitFindings;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Emit, record on torch (run_batch.py under `torch_python`), replay natively with timing.
int record_and_replay(const ConformOptions& o, std::ostream& out, std::ostream& err) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("shardfuzz-conform-" + std::to_string(::getpid()));
  const fs::path programs = root / "programs", traces = root / "traces";
  fs::create_directories(programs);
  int world = o.world;
  if (!o.scenario_file.empty()) {
    harness::Scenario sc = harness::load_scenario_or_reproducer(o.scenario_file);
    world = sc.world_size;
    for (int k = 0; k < std::max(1, o.repeat); ++k) {
      char name[32];
      std::snprintf(name, sizeof name, "case-%04d", k);
      if (!write_program(programs / (std::string(name) + ".py"), harness::torch_repro_script(sc), err)) return kExitUsage;
    }
  } else if (int rc = emit_cases(o, programs.string(), out, err); rc != kExitOk) {
    return rc;
  }
  if (!write_program(root / "run_batch.py", harness::kRunBatchText, err)) return kExitUsage;
  // One GPU here at most: world > 1 records on CPU with gloo.
  const std::string command = "'" + o.torch_python + "' '" + (root / "run_batch.py").string() + "' '" +
                              programs.string() + "' '" + traces.string() + "' --world " + std::to_string(world) +
                              (world > 1 ? " --cpu" : "");
  out << "conform: recording on torch: " << command << std::endl;
  if (std::system(command.c_str()) != 0) {
    err << "shardfuzz conform: the torch recording failed (is torch importable by " << o.torch_python
        << "?); programs kept in " << programs.string() << "\n";
    return kExitUsage;
  }
  std::vector<harness::ConformanceResult> results;
  std::vector<double> native_seconds;
  for (const std::string& f : harness::json_files_in(traces.string(), "conform")) {
    const auto t0 = std::chrono::steady_clock::now();
    results.push_back(harness::replay_trace_file(f));
    native_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::vector<double> torch_seconds;
  std::ifstream timings(traces / "timings.txt");
  std::string name;
  double seconds = 0;
  bool first = true;
  while (timings >> name >> seconds) {
    if (!first) torch_seconds.push_back(seconds);  // the first run pays for torch's lazy initialisation
    first = false;
  }
  if (native_seconds.size() > 1) native_seconds.erase(native_seconds.begin());
  const int rc = print_results(results, out);
  const double n = median(native_seconds), t = median(torch_seconds);
  out << "conform: per scenario (warm median), native " << n * 1000 << " ms (replay incl. trace parse), torch "
      << t * 1000 << " ms" << (n > 0 && t > 0 ? " — torch / native = " + std::to_string(t / n) : std::string())
      << "; recordings in " << traces.string() << std::endl;
  return rc;
}

}  // namespace

int run_conform(const ConformOptions& options, std::ostream& out, std::ostream& err) {
  if (!options.torch_python.empty()) return record_and_replay(options, out, err);
  if (!options.emit_dir.empty()) return emit_cases(options, options.emit_dir, out, err);
  std::string dir = options.traces_dir;
  if (dir.empty()) {
    dir = default_traces_dir();
    if (dir.empty()) {
      err << "shardfuzz conform: no --traces given and the default folder " << kDefaultTraces
          << " does not exist (looked in " << std::filesystem::current_path().string() << ")\n";
      return kExitUsage;
    }
  }

  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    err << "shardfuzz conform: trace folder not found: " << dir << "\n";
    return kExitUsage;
  }

  std::vector<harness::ConformanceResult> results;
  try {
    // An empty folder would "pass" vacuously; in CI that hides a broken checkout.
    if (count_traces(dir) == 0) {
      err << "shardfuzz conform: no *.json traces in " << dir << "\n";
      return kExitUsage;
    }
    results = harness::replay_trace_dir(dir);
  } catch (const std::exception& e) {
    err << "shardfuzz conform: cannot read " << dir << ": " << e.what() << "\n";
    return kExitUsage;
  }

  return print_results(results, out);
}

}  // namespace shardfuzz::cli
