// `shardfuzz conform --traces DIR`: one line per trace, the first divergence under each failure,
// and a summary line that CI greps.
#include "fuzz/cli/conform_command.h"

#include "fuzz/cli/exit_codes.h"
#include "harness/conformance/replay.h"
#include "harness/json_files.h"

#include <exception>
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
  cmd->footer(std::string(
                  "Each trace (*.json, by name) runs under its own profile; rank 0's events, their "
                  "groups, and the pending all-gathers and unsharded groups after each must match "
                  "the recording. Prints PASS/FAIL per trace, the first divergence under a FAIL, "
                  "then 'conform: N passed, M failed'.\n\n") +
              kExitCodesHelp);
  return cmd;
}

int run_conform(const ConformOptions& options, std::ostream& out, std::ostream& err) {
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

}  // namespace shardfuzz::cli
