// `shardfuzz replay`.
#include "app/replay_command.h"

#include "app/exit_codes.h"
#include "harness/report/ci_reports.h"
#include "harness/reproducer.h"

namespace shardfuzz::app {

CLI::App* add_replay_command(CLI::App& app, ReplayOptions& options) {
  CLI::App* cmd = app.add_subcommand("replay", "Replay every reproducer in DIR against its expected verdicts");
  cmd->add_option("dir", options.dir, "folder of reproducer JSON files")->capture_default_str();
  add_backend_flags(cmd, options.backend);
  add_ci_report_flags(cmd, options.reports);
  return cmd;
}

int run_replay(const ReplayOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<harness::ReplayResult> results;
  try {
    std::unique_ptr<harness::Backend> backend;
    if (!is_embedded_default(options.backend)) backend = make_backend(options.backend);
    results = harness::replay_dir(options.dir, backend ? *backend : harness::threads_backend());
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
  if (!write_ci_reports(options.reports, {harness::replay_suite(options.dir, options.backend.backend, results)},
                        harness::replay_summary(options.dir, options.backend.backend, results), err))
    return kExitUsage;
  return failed ? kExitFindings : kExitOk;
}

}  // namespace shardfuzz::app
