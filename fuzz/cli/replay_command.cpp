// `shardfuzz replay`.
#include "fuzz/cli/replay_command.h"

#include "fuzz/cli/exit_codes.h"
#include "harness/reproducer.h"

namespace shardfuzz::cli {

CLI::App* add_replay_command(CLI::App& app, ReplayOptions& options) {
  CLI::App* cmd = app.add_subcommand("replay", "Replay every reproducer in DIR against its expected verdicts");
  cmd->add_option("dir", options.dir, "folder of reproducer JSON files")->capture_default_str();
  add_backend_flags(cmd, options.backend);
  return cmd;
}

int run_replay(const ReplayOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<harness::ReplayResult> results;
  try {
    std::unique_ptr<harness::Backend> backend;
    if (options.backend.backend != "threads" || options.backend.no_recovery) backend = make_backend(options.backend);
    results = harness::replay_dir(options.dir, backend.get());
  } catch (const std::exception& e) {
    err << "shardfuzz replay: " << e.what() << "\n";
    return kExitUsage;
  }
  int passed = 0, failed = 0, skipped = 0;
  for (const auto& r : results) {
    if (r.skipped) {
      ++skipped;
      out << "SKIP " << r.file << " [" << r.profile << "] " << r.message << "\n";
    } else if (r.ok()) {
      ++passed;
      out << "PASS " << r.file << " [" << r.profile << "] " << r.expected << "\n";
    } else {
      ++failed;
      out << "FAIL " << r.file << " [" << r.profile << "] expected " << r.expected << ", got " << r.actual
          << (r.message.empty() ? "" : ": " + r.message) << "\n";
    }
  }
  out << "replay: " << passed << " passed, " << failed << " failed" << (skipped ? ", " + std::to_string(skipped) + " skipped" : "") << "\n";
  return failed ? kExitFindings : kExitOk;
}

}  // namespace shardfuzz::cli
