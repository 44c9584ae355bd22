// `shardfuzz gen`.
#include "app/gen_command.h"

#include "app/exit_codes.h"
#include "fuzz/gen/generate.h"
#include "harness/scenario/format_table.h"
#include "harness/scenario/scenario_json.h"
#include "harness/scenario/standard_scenarios.h"

namespace shardfuzz::app {

CLI::App* add_gen_command(CLI::App& app, GenOptions& o) {
  CLI::App* cmd = app.add_subcommand("gen", "Print the scenario generated from a seed");
  cmd->add_option("--seed", o.seed, "seed")->capture_default_str();
  cmd->add_option("--size", o.size, "RapidCheck size 0-100 (bigger: more blocks and groups)")->capture_default_str();
  cmd->add_option("--world", o.world, "pin the world size");
  cmd->add_option("--profile", o.profile, "pin the profile");
  cmd->add_option("--standard", o.standard,
                  "print a named scenario instead: small (the benchmarks' standard small scenario: 4 gated MoE "
                  "blocks, dim 64, nested experts, full AC, world 4, 2 steps); large (the GPU benchmark's model: 8 "
                  "blocks, dim 4096, bfloat16, world 1)")
      ->check(CLI::IsMember({"small", "large"}));
  cmd->add_flag("--format-table", o.format_table,
                "print the field tables of docs/scenario-format.md, made from the records' field lists");
  return cmd;
}

int run_gen(const GenOptions& o, std::ostream& out, std::ostream& err) {
  if (o.size < 0 || o.size > 100 || o.world < 0 || o.world > 8) {
    err << "shardfuzz gen: --size must be 0-100 and --world 0-8\n";
    return kExitUsage;
  }
  if (o.format_table) {
    out << harness::scenario_format_tables();
    return kExitOk;
  }
  if (!o.standard.empty()) {
    const std::string profile = o.profile.empty() ? "torch-2.11" : o.profile;
    harness::Scenario sc = o.standard == "small" ? harness::standard_small_scenario(profile)
                                                 : harness::standard_large_scenario(profile);
    if (o.world > 0) sc.world_size = o.world;
    out << harness::to_json_text(sc) << "\n";
    return kExitOk;
  }
  fuzz::GenConfig config;
  config.world = o.world;
  config.profile = o.profile;
  out << harness::to_json_text(fuzz::generate(config, o.seed, o.size)) << "\n";
  return kExitOk;
}

}  // namespace shardfuzz::app
