// `shardfuzz export`.
#include "app/export_command.h"

#include "app/exit_codes.h"
#include "harness/reproducer.h"
#include "harness/backends/torch/repro_script.h"

#include <fstream>
#include <stdexcept>

namespace shardfuzz::app {

CLI::App* add_export_command(CLI::App& app, ExportOptions& o) {
  CLI::App* cmd = app.add_subcommand("export", "Print a standalone PyTorch FSDP2 reproducer (python) for a scenario");
  cmd->add_option("file", o.file, "scenario or reproducer JSON")->required();
  cmd->add_flag("--torch", o.torch, "emit a Python program on torch's fully_shard (the only target for now)");
  cmd->add_option("--profile", o.profile,
                  "override the profile (torch-2.9: emulate the pre-PR-#164009 post_forward on the installed torch)");
  cmd->add_option("--world", o.world, "override the world size (the script's default --world)");
  return cmd;
}

int run_export(const ExportOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.torch) {
    err << "shardfuzz export: say which target: --torch\n";
    return kExitUsage;
  }
  std::string note;
  harness::Scenario sc;
  try {
    const harness::Reproducer r = harness::load_reproducer(o.file);
    sc = r.scenario;
    note = "Found by: " + r.found_by + "\nFailed with: " + r.message;
  } catch (const std::invalid_argument&) {
    sc = harness::load_scenario_or_reproducer(o.file);  // a bare scenario (or the reader's own error)
  }
  if (!o.profile.empty()) sc.profile = semantics::Profile::named(o.profile);
  if (o.world > 0) sc.world_size = o.world;
  out << harness::torch_repro_script(sc, note);
  return kExitOk;
}

}  // namespace shardfuzz::app
