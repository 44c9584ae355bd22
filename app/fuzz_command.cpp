// `shardfuzz fuzz`.
#include "app/fuzz_command.h"

#include "fuzz/coverage/edge_map.h"
#include "fuzz/campaign/jobs.h"
#include "fuzz/campaign/plan.h"

#include "app/exit_codes.h"
#include "runtime/semantics/profile.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace shardfuzz::app {

double parse_duration_seconds(const std::string& text, const std::string& flag) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument(flag + ": '" + text + "' is not a duration (e.g. 60s, 5m, 1h)");
  }
  const std::string unit = text.substr(used);
  double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (scale < 0 || !std::isfinite(value) || value <= 0)
    throw std::invalid_argument(flag + ": '" + text + "' is not a positive duration (e.g. 60s, 5m, 1h)");
  return value * scale;
}

namespace {
void add_fleet_flags(CLI::App* cmd, FuzzOptions& o);

// --faults, --fault-kinds, --recoverable-faults, --seeded-schedules: what the draw adds to a case.
void add_draw_flags(CLI::App* cmd, FuzzOptions& o) {
  cmd->add_flag("--faults", o.faults,
                "give every scenario a fault plan (1-2 of: straggler, collective error, hang, crash at a drawn "
                "collective of a drawn rank; an exception, NaN or Inf in a drawn module at a drawn step; an "
                "allocation failure); faults_detected and nonfinite_reported judge them");
  cmd->add_option("--fault-kinds", o.fault_kinds,
                  "draw only these fault kinds (implies --faults): straggler, collective_error, hang, crash, "
                  "exception, nan, inf, oom, abort (abort ends the case's process: a process_survives finding)")
      ->delimiter(',');
  cmd->add_option("--recoverable-faults", o.recoverable_faults,
                  "without --faults: the percent of cases (0-100) given one recoverable fault on a drawn rank (an "
                  "oom at a drawn allocation, or an exception in a drawn module's forward or backward), so that recovery and the state it leaves are always judged; the native "
                  "backends only (0 with --differential or --backend torch)")
      ->capture_default_str();
  cmd->add_option("--seeded-schedules", o.seeded_schedules,
                  "the percent of multi-rank cases (0-100) whose rank threads run under a seeded schedule "
                  "(preemptions at collective boundaries drawn from the case's seed) instead of the canonical one; "
                  "threads backend only (docs/runtime.md, \"Deterministic schedules\")")
      ->capture_default_str();
}
}  // namespace

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
  cmd->add_option("--max-world", o.max_world, "draw world sizes up to this (1-8)")->capture_default_str();
  add_draw_flags(cmd, o);
  cmd->add_option("--out", o.out, "folder for minimal reproducers")->capture_default_str();
  add_ci_report_flags(cmd, o.reports);
  cmd->add_flag("--keep-going", o.keep_going, "continue after a finding");
  cmd->add_flag("--coverage-guided", o.coverage_guided,
                "keep scenarios that reach new runtime edges in a corpus and spend half of the cases on structure-aware "
                "mutants of them (a build configured with -DSHARDFUZZ_COVERAGE=ON; docs/generators.md)");
  cmd->add_option("--corpus", o.corpus,
                  "with --coverage-guided: the corpus folder, kept between campaigns and replayed first (default: "
                  "OUT/corpus)");
  cmd->add_option("--shrink-steps", o.shrink_steps, "shrink budget: runs")->capture_default_str();
  cmd->add_option("--shrink-seconds", o.shrink_seconds, "shrink budget: seconds")->capture_default_str();
  cmd->add_flag("--no-isolation", o.no_isolation,
                "run cases in this process (default: each native run in a child process, so a crash or hang of a "
                "case is a finding of process_survives, not the end of the campaign)");
  cmd->add_option("--case-timeout", o.case_timeout, "an isolated case's wall-clock limit (30s, 2m)")
      ->capture_default_str();
  cmd->add_option("--case-memory-mb", o.case_memory_mb, "an isolated case's resident memory limit in MiB")
      ->capture_default_str();
  add_fleet_flags(cmd, o);
  add_backend_flags(cmd, o.backend);
  cmd->add_flag("--differential", o.differential.on,
                "run each case on the native runtime under the profile that models the installed torch AND on that "
                "torch (the torch backend: --torch-python, --cpu, --torch-deadline); a divergence of their timelines "
                "(event, group, pending all-gathers, unsharded groups), of a property's verdict or, on CUDA, of the "
                "bytes a layer leaves behind is a finding (matches_torch), shrunk keeping it and attributed: torch "
                "changed, or the native model is wrong. --backend names the native side (threads or process)");
  cmd->add_option("--torch-as", o.differential.torch_as,
                  "with --differential: run torch patched to behave as this profile (torch-2.9: post_forward with PR "
                  "#164009 undone), to watch the campaign catch a torch change");
  return cmd;
}

namespace {

// --resume, --jobs, --shrink-workers, --shard and --findings-db: where the campaign's cases run and
// what it continues.
void add_fleet_flags(CLI::App* cmd, FuzzOptions& o) {
  cmd->add_option("--resume", o.resume,
                  "continue the campaign whose --out folder this is (its .campaign.json), e.g. after the harness was "
                  "killed; its saved options apply");
  cmd->add_option("--jobs", o.jobs,
                  "run the campaign as N local shards in parallel processes (OUT/jobs/I), merged into OUT; the cases "
                  "run do not depend on N (default: the cores available; 1 for --differential, --coverage-guided and "
                  "backends other than threads)");
  cmd->add_option("--shrink-workers", o.shrink_workers,
                  "isolated workers a shrink runs its candidate cases on at once; the minimal case is the same for any "
                  "number (default: the jobs when the campaign stops at its first finding, else 1)");
  cmd->add_option("--shard", o.shard,
                  "I/N: run only the cases k with k % N == I (0 <= I < N), for a Slurm array, a Kubernetes Indexed "
                  "Job or a CI matrix; `shardfuzz merge` unites the N output folders (docs/fleets.md)");
  cmd->add_option("--findings-db", o.findings_db,
                  "the findings database (SQLite) to record into and judge new / still failing / fixed against "
                  "(default: OUT/findings.db; a nightly job keeps one between nights)");
}

// The campaign as its CI reports need it.
harness::CampaignReport campaign_report(const fuzz::CampaignOptions& c, const fuzz::CampaignResult& r) {
  harness::CampaignReport report;
  report.seed = c.seed;
  report.out_dir = c.out_dir;
  report.cases_run = r.cases_run;
  report.elapsed_seconds = r.elapsed_seconds;
  report.earlier_findings = r.earlier_findings;
  for (const auto& f : r.findings)
    report.findings.push_back({f.property, f.message, f.path, f.zoo, f.seconds_to_find, f.seconds_to_shrink});
  report.cases = r.cases;
  report.torch_version = r.torch_version;
  report.profile = r.profile;
  report.night = r.night;
  return report;
}

// A differential campaign's last lines: divergences, findings by class, each side's speed, what
// the per-layer bytes comparison saw, and what the cases exercised.
void print_differential_summary(const nlohmann::json& d, std::size_t cases, std::ostream& out) {
  const auto& classes = d.at("findings_by_class");
  out << "fuzz: differential against torch " << d.at("torch").get<std::string>() << " ("
      << d.at("profile").get<std::string>() << "): " << d.at("cases_diverged") << " of " << cases
      << " case(s) diverged, " << d.at("cases_failed_on_both") << " failed a property on both sides; torch side "
      << static_cast<int>(d.at("torch_cases_per_minute").get<double>()) << " cases/min, native side "
      << static_cast<int>(d.at("native_cases_per_minute").get<double>()) << " cases/min; findings: torch changed "
      << classes.at("torch-changed") << ", native model wrong " << classes.at("native-model-wrong")
      << ", property failed on both " << classes.at("property-failed-on-both") << "; per-layer CUDA bytes compared in "
      << d.at("cases_layer_bytes_compared") << " case(s), largest difference " << d.at("largest_layer_bytes_difference")
      << " B\nfuzz: drawn:";
  for (const auto& [feature, count] : d.at("drawn").items()) out << " " << feature << " " << count;
  out << "\n";
}

// Runs the campaign and prints its summary; the exit code.
int campaign(const fuzz::CampaignOptions& c, const CiReportFlags& reports, std::ostream& out, std::ostream& err) {
  fuzz::CampaignResult r;
  try {
    r = c.jobs > 1 ? fuzz::run_parallel_campaign(c, out) : fuzz::run_campaign(c, out);
  } catch (const std::runtime_error& e) {  // the backend itself broke (torch not importable, ...)
    err << "shardfuzz fuzz: " << e.what() << "\n";
    return kExitUsage;
  }
  const std::size_t total = r.findings.size() + static_cast<std::size_t>(r.earlier_findings);
  out << "fuzz: " << r.cases_run << " cases in " << static_cast<int>(r.elapsed_seconds) << " s, " << total
      << " finding(s)"
      << (r.earlier_findings ? " (" + std::to_string(r.earlier_findings) + " before the resume)" : std::string()) << "\n";
  const harness::CampaignReport report = campaign_report(c, r);
  const nlohmann::json summary = harness::campaign_summary(report);
  if (summary.contains("differential")) print_differential_summary(summary.at("differential"), r.cases.size(), out);
  if (!write_ci_reports(reports, {harness::campaign_suite(report)}, summary, err))
    return kExitUsage;
  return total == 0 ? kExitOk : kExitFindings;
}

// `--resume DIR`: the saved campaign's options, the backend it ran on.
int resume_fuzz(const FuzzOptions& o, std::ostream& out, std::ostream& err) {
  fuzz::CampaignOptions c;
  try {
    const fuzz::CampaignState st = fuzz::load_campaign_state(o.resume);
    if (st.finished) {
      out << "fuzz: the campaign in " << o.resume << " has finished (" << st.next_case << " cases, "
          << st.findings.size() << " finding(s)); nothing to resume\n";
      return st.findings.empty() ? kExitOk : kExitFindings;
    }
    c = fuzz::options_to_resume(st, o.resume);
    if (st.plan.differential) {
      BackendFlags flags = o.backend;
      flags.backend = "threads";
      set_up_differential(flags, {true, st.plan.torch_as, st.plan.gen.profile}, c, out);
    } else if (st.backend != "threads" || !c.recover || o.backend.device != "cpu") {
      BackendFlags flags = o.backend;
      flags.backend = st.backend;
      flags.no_recovery = !c.recover;
      c.backend = make_backend(flags);
    }
  } catch (const std::exception& e) {
    err << "shardfuzz fuzz: " << e.what() << "\n";
    return kExitUsage;
  }
  return campaign(c, o.reports, out, err);
}

// --shard I/N: its form here, its range with the plan's.
void set_shard(const std::string& shard, fuzz::CampaignOptions& c) {
  if (shard.empty()) return;
  const auto slash = shard.find('/');
  std::size_t used_i = 0, used_n = 0;
  int i = -1, n = 0;
  try {
    i = std::stoi(shard.substr(0, slash), &used_i);
    n = std::stoi(shard.substr(slash == std::string::npos ? shard.size() : slash + 1), &used_n);
  } catch (const std::exception&) {
    used_i = std::string::npos;
  }
  if (slash == std::string::npos || used_i != slash || used_n != shard.size() - slash - 1)
    throw std::invalid_argument("--shard: '" + shard + "' is not I/N with 0 <= I < N (e.g. 0/4)");
  c.shard_index = i;
  c.shard_count = n;
}

// One job for what shares one state or one device: --differential (torch holds the GPU),
// --coverage-guided (one corpus), backends that run ranks as processes of their own.
void one_job_where_needed(const FuzzOptions& o, fuzz::CampaignOptions& c, std::ostream& out) {
  if (c.jobs <= 1 || !(c.differential || c.coverage_guided || !is_embedded_default(o.backend))) return;
  if (o.jobs > 1)
    out << "fuzz: --jobs " << o.jobs << ": one job only for "
        << (c.differential ? "--differential" : c.coverage_guided ? "--coverage-guided" : "the " + o.backend.backend + " backend")
        << "\n";
  c.jobs = 1;
}

// --coverage-guided and --corpus, refused in a build without the coverage hook.
void set_coverage_guidance(const FuzzOptions& o, fuzz::CampaignOptions& c) {
  if (!o.corpus.empty() && !o.coverage_guided) throw std::invalid_argument("--corpus: only with --coverage-guided");
  if (o.coverage_guided && !fuzz::coverage::instrumented())
    throw std::invalid_argument(
        "--coverage-guided: this shardfuzz was built without the coverage hook; configure a build with "
        "-DSHARDFUZZ_COVERAGE=ON (docs/generators.md, \"Coverage-guided campaigns\")");
  c.coverage_guided = o.coverage_guided;
  c.corpus_dir = o.corpus;
}

// The plan the flags ask for, field by field; its ranges are checked with the plan's field list.
void plan_from_flags(const FuzzOptions& o, const std::string& command_line, fuzz::CampaignOptions& c) {
  c.seed = o.seed;
  c.gen.profile = o.profile;
  c.gen.world = o.world;
  c.gen.max_world = o.max_world;
  c.gen.faults = o.faults || !o.fault_kinds.empty();
  c.gen.fault_kinds = o.fault_kinds;
  // The torch side plans no allocator faults.
  c.gen.recoverable_fault_percent =
      o.differential.on || o.backend.backend == "torch" ? 0 : o.recoverable_faults;
  c.gen.seeded_schedule_percent = o.backend.backend == "threads" && !o.differential.on ? o.seeded_schedules : 0;
  if (o.cases != 0) c.cases = o.cases;
  if (!o.time.empty()) c.seconds = parse_duration_seconds(o.time, "--time");
  if (!c.cases && !c.seconds) c.seconds = 60;
  if (o.no_isolation) c.isolation.reset();
  else
    c.isolation = harness::isolation::Limits{
        std::chrono::milliseconds(static_cast<int64_t>(parse_duration_seconds(o.case_timeout, "--case-timeout") * 1000)),
        int64_t{o.case_memory_mb} << 20};
  c.out_dir = o.out;
  c.keep_going = o.keep_going;
  set_coverage_guidance(o, c);
  c.until_row = o.until_row;
  set_shard(o.shard, c);
  c.jobs = o.jobs == 0 ? fuzz::available_cores() : o.jobs;
  c.findings_db = o.findings_db;
  if (o.shrink_workers != 0) c.shrink_workers = o.shrink_workers;
  c.shrink_budget = {o.shrink_steps, o.shrink_seconds};
  c.command = command_line;
  c.recover = !o.backend.no_recovery;
}

// What the backend flags ask of the world the generator draws.
void check_world_against_backend(const FuzzOptions& o, fuzz::CampaignOptions& c) {
  if (o.backend.nproc > 0) {
    if (o.world != 0 && o.world != o.backend.nproc)
      throw std::invalid_argument("--world: " + std::to_string(o.world) + " differs from --nproc " +
                                  std::to_string(o.backend.nproc));
    c.gen.world = o.backend.nproc;  // every scenario runs on the N rank processes
  }
  if (o.backend.backend == "nccl" && o.backend.nproc == 0)
    throw std::invalid_argument("--nproc: --backend nccl needs it (one rank process per GPU)");
  if (o.backend.backend == "threads" && o.backend.device != "cpu") {
    if (o.world > 1)
      throw std::invalid_argument("--world: ranks as threads on " + o.backend.device +
                                  " run world size 1 only (docs/gpu-path.md); use --backend process --nproc N");
    c.gen.world = 1;
  }
}

// What runs the cases: the differential's two sides, another backend, or the embedded default.
void set_backend(const FuzzOptions& o, fuzz::CampaignOptions& c, std::ostream& out) {
  if (!o.differential.torch_as.empty() && !o.differential.on) throw std::invalid_argument("--torch-as: only with --differential");
  if (o.differential.on) {
    c.isolation.reset();
    set_up_differential(o.backend, {true, o.differential.torch_as, o.profile}, c, out);
  } else if (!is_embedded_default(o.backend)) {
    c.backend = make_backend(o.backend);
  }
  if (o.backend.backend == "torch" && !o.differential.on) {
    if (c.gen.profile.empty()) c.gen.profile = "torch-2.11";  // the torch as installed
    if (!c.backend->runs_profile(c.gen.profile))
      throw std::invalid_argument("--profile: the " + c.backend->name() + " backend runs torch-2.11 (as installed) " +
                                  "or torch-2.9 (post_forward with PR #164009 undone), not '" + c.gen.profile + "'");
  }
}

}  // namespace

int run_fuzz(const FuzzOptions& o, const std::string& command_line, std::ostream& out, std::ostream& err) {
  if (!o.resume.empty()) return resume_fuzz(o, out, err);
  fuzz::CampaignOptions c;
  try {
    plan_from_flags(o, command_line, c);
    fuzz::check_plan(c);  // before the backend starts: a bad flag costs no torch worker
    check_world_against_backend(o, c);
    set_backend(o, c, out);
    one_job_where_needed(o, c, out);
    // By default the jobs of a campaign that stops at its first finding (within range: the jobs
    // were checked): the other shards stop when one claims its failing case, so their cores are
    // the shrink's.
    if (o.shrink_workers == 0) c.shrink_workers = c.keep_going ? 1 : c.jobs;
  } catch (const std::exception& e) {
    err << "shardfuzz fuzz: " << e.what() << "\n";
    return kExitUsage;
  }
  return campaign(c, o.reports, out, err);
}

}  // namespace shardfuzz::app
