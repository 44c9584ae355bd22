// `shardfuzz run`.
#include "app/run_command.h"

#include "app/exit_codes.h"
#include "harness/report/layer_table.h"
#include "harness/properties/property.h"
#include "harness/report/html_report.h"
#include "harness/report/perfetto_trace.h"
#include "harness/report/run_json.h"
#include "harness/files/write_file.h"
#include "harness/reproducer.h"
#include "harness/soak/soak.h"

#include <stdexcept>
#include <vector>

namespace shardfuzz::app {

CLI::App* add_run_command(CLI::App& app, RunCommandOptions& options) {
  CLI::App* cmd = app.add_subcommand("run", "Run one scenario (or reproducer) and print per-layer memory and verdicts");
  cmd->add_option("file", options.file, "scenario or reproducer JSON")->required();
  cmd->add_option("--profile", options.profile, "override the semantics profile (torch-2.9, torch-2.11, strict)");
  cmd->add_option("--world", options.world, "override the world size");
  cmd->add_flag("--json", options.json, "print verdicts and timelines as JSON");
  cmd->add_option("--soak", options.soak,
                  "soak: run this many steps (20-1000) with the timeline off and check that every rank's allocator "
                  "bytes at each step end stay equal and the process's resident set stays flat");
  cmd->add_option("--trace", options.trace,
                  "write the run as a Chrome / Perfetto trace (trace-event JSON: open it in ui.perfetto.dev): per rank "
                  "the steps, each group's forward, backward and recompute, all-gathers from issue to use, memory "
                  "counters");
  cmd->add_option("--html", options.html,
                  "write a self-contained HTML report there: verdicts, the replay command, the scenario as a tree, "
                  "per rank the memory at each group's post_backward (ledger kinds, allocator, expected bound, culprit)");
  add_backend_flags(cmd, options.backend);
  return cmd;
}

namespace {

// The scenario to run, with the command line's overrides; throws naming what is wrong.
harness::Scenario load_run_scenario(const RunCommandOptions& options) {
  harness::Scenario sc = harness::load_scenario_or_reproducer(options.file);
  if (!options.profile.empty()) sc.profile = semantics::Profile::named(options.profile);
  if (options.world > 0) sc.world_size = options.world;
  if (options.soak != 0) {
    if (options.soak < harness::kMinSoakSteps || options.soak > harness::ScenarioLimits::kMaxSteps)
      throw std::invalid_argument("--soak: " + std::to_string(options.soak) + " steps outside [" +
                                  std::to_string(harness::kMinSoakSteps) + ", " +
                                  std::to_string(harness::ScenarioLimits::kMaxSteps) + "]");
    if (options.backend.backend != "threads") throw std::invalid_argument("--soak: the threads backend only");
    sc.steps = options.soak;
  }
  sc.validate();
  return sc;
}

int soak(const harness::Scenario& sc, std::ostream& out) {
  const harness::SoakReport report = harness::run_soak(sc);
  out << "soak " << sc.name << ": " << sc.steps << " steps, world " << sc.world_size << ", " << report.seconds
      << " s\n" << (report.skipped ? "SKIP" : report.ok ? "PASS" : "FAIL") << " soak_memory_flat: " << report.message
      << "\n";
  return report.ok ? kExitOk : kExitFindings;
}

// Writes `text()` to `path` when one is given; false (after saying why) when it could not.
template <class Text>
bool write_if_asked(const std::string& path, const char* flag, const std::string& what, Text text, std::ostream& err) {
  if (path.empty()) return true;
  try {
    harness::write_file_atomically(path, text());
  } catch (const std::exception& e) {
    err << "shardfuzz run: " << flag << ": " << e.what() << "\n";
    return false;
  }
  err << "shardfuzz run: wrote " << what << "\n";
  return true;
}

// The per-layer memory table of every rank, then one line per property.
void print_run(const RunCommandOptions& options, const harness::Scenario& sc, const harness::RunRecord& run,
               const std::vector<harness::Verdict>& verdicts, std::ostream& out) {
  out << "scenario " << (sc.name.empty() ? options.file : sc.name) << ": world " << sc.world_size << ", "
      << sc.blocks.size() << " block(s), " << sc.fully_shard.size() << " fully_shard group(s), profile "
      << sc.profile.name << ", " << sc.steps << " step(s), backend " << run.backend << "\n";
  // The fingerprint says whether two runs interleaved their rank threads alike (comm/schedule.h).
  if (run.schedule.scheduled) out << "schedule: " << run.schedule.summary() << "\n";
  out << "\n";
  if (run.ok())
    for (const auto& r : run.ranks)
      out << harness::format_layer_table(harness::group_table(r, sc.steps - 1),
                                         "rank " + std::to_string(r.rank) + ", step " + std::to_string(sc.steps) +
                                             ": memory after each group's post_backward")
          << "\n";
  for (const auto& v : verdicts) {
    // A passed fault check says how fast each rank learned of the fault: worth a line too.
    const bool say = !v.ok || (v.property == "faults_detected" && !v.skipped);
    out << (v.skipped ? "SKIP " : v.ok ? "PASS " : "FAIL ") << v.property << (say ? ": " + v.message : "") << "\n";
  }
}

}  // namespace

int run_run(const RunCommandOptions& options, std::ostream& out, std::ostream& err) {
  harness::Scenario sc;
  try {
    sc = load_run_scenario(options);
  } catch (const std::exception& e) {
    err << "shardfuzz run: " << options.file << ": " << e.what() << "\n";
    return kExitUsage;
  }
  if (options.soak > 0) return soak(sc, out);
  harness::RunRecord run;
  try {
    auto backend = make_backend(options.backend);
    if (!backend->runs_profile(sc.profile.name))
      throw std::invalid_argument("profile '" + sc.profile.name + "': the " + backend->name() +
                                  " backend runs torch-2.11 (as installed) or torch-2.9; pass --profile");
    run = backend->run(sc);
  } catch (const std::exception& e) {
    err << "shardfuzz run: " << options.file << ": " << e.what() << "\n";
    return kExitUsage;
  }
  auto verdicts = harness::check_properties(sc, run);
  const auto html = [&] { return harness::html_report(sc, run, verdicts, "shardfuzz run " + options.file); };
  const auto trace = [&] { return harness::perfetto_trace(sc, run).dump() + "\n"; };
  if (!write_if_asked(options.html, "--html", "the report " + options.html, html, err) ||
      !write_if_asked(options.trace, "--trace", "the trace " + options.trace + " (open it in ui.perfetto.dev)", trace,
                      err))
    return kExitUsage;
  if (options.json)
    out << harness::run_json(sc, run, verdicts).dump(1) << "\n";
  else
    print_run(options, sc, run, verdicts, out);
  return harness::first_failure(verdicts) ? kExitFindings : kExitOk;
}

}  // namespace shardfuzz::app
