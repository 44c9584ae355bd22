// `shardfuzz shrink`.
#include "app/shrink_command.h"

#include "fuzz/campaign/campaign.h"
#include "fuzz/campaign/write_reproducer.h"
#include "app/exit_codes.h"
#include "fuzz/shrink/shrink.h"
#include "harness/reproducer.h"

namespace shardfuzz::app {

CLI::App* add_shrink_command(CLI::App& app, ShrinkOptions& o) {
  CLI::App* cmd = app.add_subcommand("shrink", "Minimise a failing scenario, keeping the same failed property");
  cmd->add_option("file", o.file, "scenario or reproducer JSON")->required();
  cmd->add_option("--profile", o.profile, "override the semantics profile");
  cmd->add_option("--out", o.out, "folder for the minimal reproducer")->capture_default_str();
  cmd->add_option("--steps", o.steps, "budget: runs")->capture_default_str();
  cmd->add_option("--seconds", o.seconds, "budget: seconds")->capture_default_str();
  cmd->add_flag("--keep-world", o.keep_world, "never change the world size");
  add_backend_flags(cmd, o.backend);
  return cmd;
}

int run_shrink(const ShrinkOptions& o, const std::string& command_line, std::ostream& out, std::ostream& err) {
  harness::Scenario sc;
  std::unique_ptr<harness::Backend> backend;
  try {
    sc = harness::load_scenario_or_reproducer(o.file);
    if (!o.profile.empty()) sc.profile = semantics::Profile::named(o.profile);
    sc.validate();
    backend = make_backend(o.backend);
    if (!backend->runs_profile(sc.profile.name))
      throw std::invalid_argument("profile '" + sc.profile.name + "': the " + backend->name() +
                                  " backend runs torch-2.11 (as installed) or torch-2.9; pass --profile");
  } catch (const std::exception& e) {
    err << "shardfuzz shrink: " << o.file << ": " << e.what() << "\n";
    return kExitUsage;
  }
  harness::Backend& on = *backend;
  std::string message;
  auto failure = fuzz::first_failing_property(sc, &message, on);
  if (!failure) {
    out << "shrink: " << o.file << " passes every property under " << sc.profile.name << ": nothing to shrink\n";
    return kExitOk;
  }
  out << "shrink: fails " << *failure << ": " << message << "\n";
  fuzz::StructuralShrinkOptions so;
  so.keep_world = o.keep_world;
  auto result = fuzz::shrink(
      sc, so, [&](const harness::Scenario& s) { return fuzz::first_failing_property(s, nullptr, on); },
      {o.steps, o.seconds},
      [&](const fuzz::ShrinkStep& step) {
        out << "shrink: step " << step.accepted << ": " << step.edit << "; " << step.tried << " tried: " << step.scenario.blocks.size()
            << " block(s), " << step.scenario.fully_shard.size() << " group(s), world " << step.scenario.world_size
            << "\n" << std::flush;
      },
      *failure);
  fuzz::first_failing_property(result.minimal, &message, on);
  const std::string path = fuzz::write_reproducer(result.minimal, *failure, message, o.out, command_line);
  out << "shrink: " << result.steps_accepted << " steps accepted of " << result.steps_tried << " tried"
      << (result.budget_exhausted ? " (budget exhausted)" : "") << "\nshrink: wrote " << path
      << "\nreplay with: shardfuzz run " << path << "\n";
  return kExitFindings;
}

}  // namespace shardfuzz::app
