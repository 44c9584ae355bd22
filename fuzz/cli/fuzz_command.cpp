// `shardfuzz fuzz`.
#include "fuzz/cli/fuzz_command.h"

#include "fuzz/cli/exit_codes.h"
#include "runtime/fsdp/profile.h"

#include <cmath>
#include <stdexcept>

namespace shardfuzz::cli {

double parse_duration_seconds(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument("--time: '" + text + "' is not a duration (e.g. 60s, 5m, 1h)");
  }
  const std::string unit = text.substr(used);
  double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (scale < 0 || !std::isfinite(value) || value <= 0)
    throw std::invalid_argument("--time: '" + text + "' is not a positive duration (e.g. 60s, 5m, 1h)");
  return value * scale;
}

CLI::App* add_fuzz_command(CLI::App& app, FuzzOptions& o) {
  CLI::App* cmd = app.add_subcommand("fuzz", "Generate scenarios, run them, check properties; shrink the first failure");
  cmd->add_option("--profile", o.profile,
                  "semantics profile: torch-2.7, torch-2.9, torch-2.11, strict, optionally +switch (e.g. "
                  "strict+experts_skip_empty; default: drawn)");
  cmd->add_option("--until-row", o.until_row,
                  "hunt one bug-zoo row (1-15, S2-S5): pass over findings blamed on another row");
  cmd->add_option("--time", o.time, "stop after this long (60s, 5m, 1h)");
  cmd->add_option("--cases", o.cases, "stop after this many cases");
  cmd->add_option("--seed", o.seed, "campaign seed (case k draws from its own seed derived from it)")->capture_default_str();
  cmd->add_option("--world", o.world, "pin the world size (default: drawn from 1-8)");
  cmd->add_flag("--faults", o.faults,
                "give every scenario a fault plan (1-2 of: straggler, collective error, hang, crash at a drawn "
                "collective of a drawn rank); faults_detected checks every rank learns of it in time");
  cmd->add_option("--out", o.out, "folder for minimal reproducers")->capture_default_str();
  cmd->add_flag("--keep-going", o.keep_going, "continue after a finding");
  cmd->add_option("--shrink-steps", o.shrink_steps, "shrink budget: runs")->capture_default_str();
  cmd->add_option("--shrink-seconds", o.shrink_seconds, "shrink budget: seconds")->capture_default_str();
  add_backend_flags(cmd, o.backend);
  return cmd;
}

int run_fuzz(const FuzzOptions& o, const std::string& command_line, std::ostream& out, std::ostream& err) {
  fuzz::CampaignOptions c;
  try {
    if (!o.profile.empty()) fsdp::Profile::named(o.profile);  // validates the name
    if (o.world < 0 || o.world > 8) throw std::invalid_argument("--world: " + std::to_string(o.world) + " outside 1-8");
    if (o.cases < 0) throw std::invalid_argument("--cases: negative");
    c.gen.profile = o.profile;
    c.gen.world = o.world;
    c.gen.faults = o.faults;
    c.seed = o.seed;
    if (o.cases > 0) c.cases = o.cases;
    if (!o.time.empty()) c.seconds = parse_duration_seconds(o.time);
    if (!c.cases && !c.seconds) c.seconds = 60;
    c.out_dir = o.out;
    c.keep_going = o.keep_going;
    c.until_row = o.until_row;
    c.shrink_budget = {o.shrink_steps, o.shrink_seconds};
    c.command = command_line;
    if (o.backend.backend != "threads") {
      c.backend = make_backend(o.backend);
      if (c.gen.profile.empty()) c.gen.profile = "torch-2.11";  // the torch as installed
      if (!c.backend->runs_profile(c.gen.profile))
        throw std::invalid_argument("--profile: the " + c.backend->name() + " backend runs torch-2.11 (as installed) " +
                                    "or torch-2.9 (post_forward with PR #164009 undone), not '" + c.gen.profile + "'");
    }
  } catch (const std::exception& e) {
    err << "shardfuzz fuzz: " << e.what() << "\n";
    return kExitUsage;
  }
  fuzz::CampaignResult r;
  try {
    r = fuzz::run_campaign(c, out);
  } catch (const std::runtime_error& e) {  // the backend itself broke (torch not importable, ...)
    err << "shardfuzz fuzz: " << e.what() << "\n";
    return kExitUsage;
  }
  out << "fuzz: " << r.cases_run << " cases in " << static_cast<int>(r.elapsed_seconds) << " s, " << r.findings.size()
      << " finding(s)\n";
  return r.findings.empty() ? kExitOk : kExitFindings;
}

}  // namespace shardfuzz::cli
