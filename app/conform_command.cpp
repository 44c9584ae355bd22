// `shardfuzz conform --traces DIR`: one line per trace, the first divergence under each failure,
// and a summary line that CI greps.
#include "app/conform_command.h"

#include "app/exit_codes.h"
#include "fuzz/gen/generate.h"
#include "harness/conformance/record_and_replay.h"
#include "harness/conformance/replay.h"
#include "harness/files/json_files.h"

#include <cstdio>
#include <exception>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace shardfuzz::app {
namespace {

constexpr const char* kDefaultTraces = "tests/conformance/recorded";
#ifdef SHARDFUZZ_SOURCE_DIR
constexpr const char* kBuiltFromTraces = SHARDFUZZ_SOURCE_DIR "/tests/conformance/recorded";
#else
constexpr const char* kBuiltFromTraces = "";
#endif

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
  for (const char* dir : {kDefaultTraces, kBuiltFromTraces})
    if (*dir && std::filesystem::is_directory(dir, ec)) return dir;
  return "";
}

CLI::App* add_conform_command(CLI::App& app, ConformOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "conform", "Replay recorded PyTorch FSDP2 traces on the native runtime, event for event");
  cmd->add_option("--traces", options.traces_dir,
                  "Folder of recorded traces (SCENARIO.wWORLD.PROFILE.json). Default: the project's own, "
                  "tests/conformance/recorded (in the current directory, else in the source tree built from).")
      ->option_text("DIR");
  cmd->add_option("--emit", options.emit_dir,
                  "Write --cases generated scenarios as PyTorch reproducers (case-K.py) into DIR instead: "
                  "each runs standalone (python3 case-K.py --json OUT), and --traces replays the recordings")
      ->option_text("DIR");
  cmd->add_option("--cases", options.cases, "with --emit: how many scenarios")->capture_default_str();
  cmd->add_option("--seed", options.seed, "with --emit: generator seed")->capture_default_str();
  cmd->add_option("--world", options.world, "with --emit: the world size (1-8)")->capture_default_str();
  cmd->add_option("--profile", options.profile, "with --emit: torch-2.11 (as installed) or torch-2.9 (pre-fix)")
      ->capture_default_str();
  cmd->add_option("--torch-python", options.torch_python,
                  "Record each scenario on PyTorch with this python (torch installed) through the torch "
                  "backend's worker, replay the recordings: one command, with the per-scenario time of both sides")
      ->option_text("PYTHON");
  cmd->add_option("--scenario", options.scenario_files,
                  "with --torch-python: these scenarios (or reproducers) instead of generated ones");
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

// `cases` generated scenarios named case-K. Throws std::invalid_argument naming the option out of
// range.
std::vector<harness::Scenario> generated_cases(const ConformOptions& o) {
  if (o.cases < 1) throw std::invalid_argument("--cases: must be >= 1");
  if (o.world < 1 || o.world > 8) throw std::invalid_argument("--world: " + std::to_string(o.world) + " outside 1-8");
  if (o.profile != "torch-2.11" && o.profile != "torch-2.9")
    throw std::invalid_argument("--profile: '" + o.profile + "' is not torch-2.11 (as installed) or torch-2.9 (pre-fix)");
  fuzz::GenConfig config;
  config.world = o.world;
  config.profile = o.profile;
  std::vector<harness::Scenario> out;
  for (uint64_t k = 0; static_cast<int>(out.size()) < o.cases; ++k) {
    harness::Scenario sc = fuzz::generate(config, o.seed * 1000003ULL + k, static_cast<int>(10 + (k * 37) % 91));
    char name[32];
    std::snprintf(name, sizeof name, "case-%04zu", out.size());
    sc.name = name;
    out.push_back(std::move(sc));
  }
  return out;
}

// `cases` generated scenarios as case-K.py in `dir`.
int emit_cases(const ConformOptions& o, const std::string& dir, std::ostream& out, std::ostream& err) {
  std::vector<harness::Scenario> cases;
  try {
    cases = generated_cases(o);
  } catch (const std::invalid_argument& e) {
    err << "shardfuzz conform --emit: " << e.what() << "\n";
    return kExitUsage;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    err << "shardfuzz conform --emit: cannot create " << dir << ": " << ec.message() << "\n";
    return kExitUsage;
  }
  try {
    for (const harness::Scenario& sc : cases)
      harness::write_torch_program(sc, dir,
                                   "Generated by shardfuzz conform --emit (seed " + std::to_string(o.seed) + ")");
  } catch (const std::exception& e) {
    err << "shardfuzz conform: " << e.what() << "\n";
    return kExitUsage;
  }
  out << "conform: wrote " << cases.size() << " reproducers to " << dir << "\n";
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

// Record each scenario on torch, replay the recordings natively (harness/conformance/record_and_replay.h);
// the results, and the time of both sides.
int record_and_replay(const ConformOptions& o, std::ostream& out, std::ostream& err) {
  std::vector<harness::Scenario> scenarios;
  harness::RecordedConformance recorded;
  try {
    scenarios = o.scenario_files.empty() ? generated_cases(o)
                                         : harness::load_conformance_scenarios(o.scenario_files, o.repeat);
  } catch (const std::exception& e) {
    err << "shardfuzz conform: " << e.what() << "\n";
    return kExitUsage;
  }
  try {
    recorded = harness::record_and_replay(scenarios, o.torch_python);
  } catch (const std::exception& e) {
    err << "shardfuzz conform: " << e.what() << "\n";
    return kExitUsage;
  }
  const int rc = print_results(recorded.results, out);
  const double n = recorded.native_seconds, t = recorded.torch_seconds;
  out << "conform: per scenario (warm median), native " << n * 1000 << " ms (replay incl. trace parse), torch "
      << t * 1000 << " ms" << (n > 0 && t > 0 ? " — torch / native = " + std::to_string(t / n) : std::string())
      << "; recordings in " << recorded.traces_dir << std::endl;
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
          << " does not exist (looked in " << std::filesystem::current_path().string() << " and "
          << (*kBuiltFromTraces ? kBuiltFromTraces : "no source tree") << ")\n";
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

}  // namespace shardfuzz::app
