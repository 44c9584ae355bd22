// `shardfuzz replay`.
#include "app/replay_command.h"

#include "app/exit_codes.h"
#include "harness/reproducer.h"

namespace shardfuzz::app {
namespace {

// One test case per reproducer and profile.
harness::JUnitSuite replay_suite(const ReplayOptions& options, const std::vector<harness::ReplayResult>& results) {
  harness::JUnitSuite suite{"replay " + options.dir + " (" + options.backend.backend + ")", {}};
  for (const auto& r : results) {
    harness::JUnitCase c;
    c.classname = r.file;
    c.name = r.profile;
    c.seconds = r.seconds;
    using Outcome = harness::JUnitCase::Outcome;
    c.outcome = r.skipped ? Outcome::Skipped : r.ok() ? Outcome::Passed : r.actual == "error" ? Outcome::Error : Outcome::Failed;
    if (c.outcome == Outcome::Skipped) c.message = r.message;
    if (c.outcome == Outcome::Failed || c.outcome == Outcome::Error) {
      c.message = "expected " + r.expected + ", got " + r.actual;
      c.text = r.message + "\nreplay with: shardfuzz run --profile " + r.profile + " " + options.dir + "/" + r.file;
    }
    suite.cases.push_back(std::move(c));
  }
  return suite;
}

nlohmann::json replay_summary(const ReplayOptions& options, const std::vector<harness::ReplayResult>& results,
                              int passed, int failed, int skipped) {
  nlohmann::json j = {{"command", "replay"}, {"dir", options.dir},     {"backend", options.backend.backend},
                      {"passed", passed},    {"failed", failed},       {"skipped", skipped},
                      {"results", nlohmann::json::array()}};
  for (const auto& r : results)
    j["results"].push_back({{"file", r.file},
                            {"profile", r.profile},
                            {"expected", r.expected},
                            {"actual", r.actual},
                            {"ok", r.ok()},
                            {"skipped", r.skipped},
                            {"message", r.message},
                            {"seconds", r.seconds}});
  return j;
}

}  // namespace

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
  if (!write_ci_reports(options.reports, {replay_suite(options, results)},
                        replay_summary(options, results, passed, failed, skipped), err))
    return kExitUsage;
  return failed ? kExitFindings : kExitOk;
}

}  // namespace shardfuzz::app
