// `shardfuzz gen`.
#include "app/gen_command.h"

#include "app/exit_codes.h"
#include "fuzz/gen/generate.h"
#include "fuzz/campaign/campaign.h"
#include "harness/scenario/format_table.h"
#include "harness/scenario/scenario_features.h"
#include "harness/scenario/scenario_json.h"
#include "harness/scenario/standard_scenarios.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace shardfuzz::app {
namespace {

// What `n` cases of a campaign with seed `seed` draw (case k from its own seed and size, as
// fuzz/campaign does): each feature's share, the worlds, and the steps.
void print_stats(const fuzz::GenConfig& config, uint64_t seed, int n, std::ostream& out) {
  std::map<std::string, int> features, worlds, steps;
  for (int k = 0; k < n; ++k) {
    const harness::Scenario sc = fuzz::generate(config, fuzz::case_seed(seed, k), fuzz::case_size(k));
    for (const auto& f : harness::features_of(sc)) ++features[f];
    ++worlds[std::to_string(sc.world_size)];
    ++steps[sc.steps >= 3 ? "3+" : std::to_string(sc.steps)];
  }
  auto share = [n](int count) {
    char text[32];
    std::snprintf(text, sizeof text, "%5.1f%%", 100.0 * count / n);
    return std::string(text);
  };
  out << "gen: " << n << " cases of seed " << seed << " (as a campaign draws them)\n";
  for (const auto& name : harness::scenario_feature_names())
    out << "  " << name << std::string(28 - std::min<std::size_t>(27, name.size()), ' ') << share(features[name]) << "\n";
  for (const auto& [w, count] : worlds) out << "  world " << w << std::string(22 - std::min<std::size_t>(21, w.size()), ' ') << share(count) << "\n";
  for (const auto& [s, count] : steps) out << "  steps " << s << std::string(22 - std::min<std::size_t>(21, s.size()), ' ') << share(count) << "\n";
}

}  // namespace

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
  cmd->add_option("--stats", o.stats, "draw this many cases as a campaign with --seed does and print the share of each "
                                      "feature (expert parallelism, HSDP, LoRA, ...), world and step count")
      ->check(CLI::Range(1, 1000000));
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
  if (o.stats > 0) {
    print_stats(config, o.seed, o.stats, out);
    return kExitOk;
  }
  out << harness::to_json_text(fuzz::generate(config, o.seed, o.size)) << "\n";
  return kExitOk;
}

}  // namespace shardfuzz::app
