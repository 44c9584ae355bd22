// `shardfuzz run`.
#include "fuzz/cli/run_command.h"

#include "fuzz/cli/exit_codes.h"
#include "harness/layer_table.h"
#include "harness/properties/property.h"
#include "harness/reproducer.h"
#include "harness/scenario_json.h"
#include "harness/threads_backend.h"

#include <nlohmann/json.hpp>

namespace shardfuzz::cli {

CLI::App* add_run_command(CLI::App& app, RunCommandOptions& options) {
  CLI::App* cmd = app.add_subcommand("run", "Run one scenario (or reproducer) and print per-layer memory and verdicts");
  cmd->add_option("file", options.file, "scenario or reproducer JSON")->required();
  cmd->add_option("--profile", options.profile, "override the semantics profile (torch-2.9, torch-2.11, strict)");
  cmd->add_option("--world", options.world, "override the world size");
  cmd->add_flag("--json", options.json, "print verdicts and timelines as JSON");
  add_backend_flags(cmd, options.backend);
  return cmd;
}

int run_run(const RunCommandOptions& options, std::ostream& out, std::ostream& err) {
  harness::Scenario sc;
  try {
    sc = harness::load_scenario_or_reproducer(options.file);
    if (!options.profile.empty()) sc.profile = options.profile;
    if (options.world > 0) sc.world_size = options.world;
    sc.validate();
  } catch (const std::exception& e) {
    err << "shardfuzz run: " << options.file << ": " << e.what() << "\n";
    return kExitUsage;
  }
  harness::RunRecord run;
  try {
    auto backend = make_backend(options.backend);
    if (!backend->runs_profile(sc.profile))
      throw std::invalid_argument("profile '" + sc.profile + "': the " + backend->name() +
                                  " backend runs torch-2.11 (as installed) or torch-2.9; pass --profile");
    run = backend->run(sc);
  } catch (const std::exception& e) {
    err << "shardfuzz run: " << options.file << ": " << e.what() << "\n";
    return kExitUsage;
  }
  auto verdicts = harness::check_properties(sc, run);
  if (options.json) {
    nlohmann::json j;
    j["scenario"] = harness::to_json(sc);
    j["error"] = run.error;
    j["backend"] = run.backend;
    for (const auto& v : verdicts)
      j["verdicts"].push_back({{"property", v.property}, {"ok", v.ok}, {"skipped", v.skipped}, {"message", v.message}});
    for (const auto& r : run.ranks) {
      nlohmann::json rank = {{"rank", r.rank}, {"losses", r.losses}, {"baseline_bytes", r.baseline_bytes},
                             {"teardown_bytes", r.teardown_bytes}, {"training_peak_bytes", r.training_peak_bytes}};
      for (const auto& e : r.timeline) rank["timeline"].push_back(e.to_json());
      j["ranks"].push_back(rank);
    }
    out << j.dump(1) << "\n";
  } else {
    out << "scenario " << (sc.name.empty() ? options.file : sc.name) << ": world " << sc.world_size << ", "
        << sc.blocks.size() << " block(s), " << sc.fully_shard.size() << " fully_shard group(s), profile "
        << sc.profile << ", " << sc.steps << " step(s), backend " << run.backend << "\n\n";
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
  return harness::first_failure(verdicts) ? kExitFindings : kExitOk;
}

}  // namespace shardfuzz::cli
