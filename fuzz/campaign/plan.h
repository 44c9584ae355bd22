// What a campaign was asked to do, described once: `CampaignPlan` and its field list. Everything
// that reads or checks a plan is a visitor over that list (fuzz/campaign/plan.cpp): the
// `.campaign.json` reader and writer (a resume reads back what was asked), the range checks the
// command line runs (naming the flag) and a saved file gets (naming the JSON path), and merge's
// question "are these folders shards of one campaign?" (the fields whose role is Draws).
// A new plan field is one struct line and one list line.
#pragma once

#include "fuzz/gen/gen_config.h"
#include "fuzz/shrink/shrink.h"
#include "harness/isolation/child_outcome.h"
#include "harness/scenario/fields.h"

#include <nlohmann/json.hpp>

#include <climits>
#include <cstdint>
#include <optional>
#include <string>

namespace shardfuzz::fuzz {

// What a plan field decides, for merge and the docs.
enum class PlanRole {
  Draws,  // which cases run and what they are: every shard of one campaign must agree
  Run,    // how this process runs them (limits, reports, where it writes)
};

struct CampaignPlan {
  GenConfig gen;
  uint64_t seed = 1;
  std::optional<int> cases;       // stop after this many cases
  std::optional<double> seconds;  // or after this much wall clock, over all sessions (whichever comes first)
  ShrinkBudget shrink_budget{300, 120.0};
  bool keep_going = false;  // continue after a finding (default: stop at the first)
  // Hunt for one bug-zoo row: findings blamed on another row are reported and passed over.
  std::string until_row;
  std::string command;  // the command line, recorded in reproducers
  // The threads backend recovers from planned oom and exception faults (false: --no-recovery).
  bool recover = true;
  // Differential: each case runs natively under the profile modelling the installed torch and on
  // that torch (the backend is the torch backend); a divergence is a finding (harness/differential).
  bool differential = false;
  std::string torch_as;  // differential: run torch patched to behave as this profile ("": as installed)
  // Coverage guidance (fuzz/campaign/guidance.h): part of the cases are mutants of corpus scenarios
  // that reached new runtime edges, kept in corpus_dir between campaigns. Needs a build with
  // -DSHARDFUZZ_COVERAGE=ON. Cases then depend on the corpus, not on (seed, k) alone.
  bool coverage_guided = false;
  std::string corpus_dir;  // "": OUT/corpus
  // Each native run in a child process under these limits (nullopt: in this process).
  std::optional<harness::isolation::Limits> isolation = harness::isolation::Limits{};
  // A fleet's share (--shard I/N): this campaign runs the cases k with k % shard_count ==
  // shard_index, so N processes (a Slurm array, an Indexed Job, a CI matrix) with one plan split
  // one campaign deterministically and `shardfuzz merge` unites their folders.
  int shard_index = 0;
  int shard_count = 1;
  // --jobs N: the campaign runs as N local shards (OUT/jobs/I, fuzz/campaign/jobs.h).
  int jobs = 1;
  // Isolated case workers a shrink runs its candidates on at once (fuzz/campaign/case_pool.h; the
  // minimal case does not depend on it). Isolation only; 1 when differential.
  int shrink_workers = 1;
  // A --jobs shard's stop file: a case past the index written there (by the parent, when a shard
  // claims a failing case) is not run and a shrink of one is dropped (fuzz/campaign/jobs.h).
  std::string stop_file;
  // The findings database (fuzz/campaign/findings_db_sink.h): "" for OUT/findings.db, or a path the
  // nightly job keeps between nights; findings_run > 0: record into that run (a --jobs shard).
  std::string findings_db;
  int64_t findings_run = 0;

  bool in_shard(int k) const { return k % shard_count == shard_index; }
  // How many of the cases [0, next_case) are this shard's.
  int shard_cases_before(int next_case) const {
    return next_case <= shard_index ? 0 : (next_case - shard_index + shard_count - 1) / shard_count;
  }
};

// How a range check names a field: by the command-line flag that sets it, or by its JSON path in a
// saved plan (`where` is the prefix, e.g. "OUT/.campaign.json: plan.").
struct PlanNaming {
  bool flags = true;
  std::string where;
};

// Throws std::invalid_argument naming the field (its flag, or its path) and the value when a field
// is outside what it allows, or a rule that ties fields together fails (shard index < count; a
// known profile and fault kinds).
void check_plan(const CampaignPlan& plan, const PlanNaming& naming = {});

nlohmann::json plan_to_json(const CampaignPlan& plan);
// Strict: an unknown key, a wrong type or a value out of range throws std::invalid_argument naming
// its path under `path`. Absent keys keep their defaults.
CampaignPlan plan_from_json(const nlohmann::json& json, const std::string& path);

// "" when the two plans are one campaign's shards (every Draws field and the shard count equal),
// else the first field that differs with both values ("seed: 7 vs 1").
std::string plan_difference(const CampaignPlan& a, const CampaignPlan& b);

}  // namespace shardfuzz::fuzz

namespace shardfuzz::harness {

// The plan's fields: v(key, member, allowed, flag, role). `flag` is the command-line flag that sets
// the field ("" for the ones only the program sets). Fields<R>::visit (the 4-argument form the
// house's record visitors take, harness/scenario/field_visitors.hpp) drops the role.
template <class V>
struct PlanFieldsAs4 {
  V& v;
  template <class T>
  void operator()(const char* key, T& member, const Allowed& allowed, const char* flag, fuzz::PlanRole) {
    v(key, member, allowed, flag);
  }
};

// A plan record's Fields: `list` (5 arguments) written once per record, `visit` derived from it.
template <class Record>
struct PlanRecordFields {
  template <class R, class V>
  static void visit(R& record, V& v) {
    PlanFieldsAs4<V> four{v};
    Fields<Record>::list(record, four);
  }
};

template <>
struct Fields<fuzz::GenConfig> : PlanRecordFields<fuzz::GenConfig> {
  static constexpr const char* what = "a generator configuration";
  template <class R, class V>
  static void list(R& g, V& v) {
    using fuzz::PlanRole;
    v("world", g.world, allow::Between{0, 8}, "--world", PlanRole::Draws);
    v("max_world", g.max_world, allow::Between{1, 8}, "--max-world", PlanRole::Draws);
    v("profile", g.profile, allow::Any{}, "--profile", PlanRole::Draws);
    v("max_blocks", g.max_blocks, allow::Between{1, 128}, "", PlanRole::Draws);
    v("max_steps", g.max_steps, allow::Between{1, 64}, "", PlanRole::Draws);
    v("faults", g.faults, allow::Any{}, "--faults", PlanRole::Draws);
    v("fault_kinds", g.fault_kinds, allow::Any{}, "--fault-kinds", PlanRole::Draws);
    v("recoverable_fault_percent", g.recoverable_fault_percent, allow::Between{0, 100}, "--recoverable-faults",
      PlanRole::Draws);
    v("seeded_schedule_percent", g.seeded_schedule_percent, allow::Between{0, 100}, "--seeded-schedules",
      PlanRole::Draws);
  }
};

template <>
struct Fields<fuzz::ShrinkBudget> : PlanRecordFields<fuzz::ShrinkBudget> {
  static constexpr const char* what = "a shrink budget";
  template <class R, class V>
  static void list(R& b, V& v) {
    using fuzz::PlanRole;
    v("max_steps", b.max_steps, allow::Between{1, 1000000}, "--shrink-steps", PlanRole::Run);
    v("max_seconds", b.max_seconds, allow::Positive{}, "--shrink-seconds", PlanRole::Run);
  }
};

template <>
struct Fields<fuzz::CampaignPlan> : PlanRecordFields<fuzz::CampaignPlan> {
  static constexpr const char* what = "a campaign plan";
  template <class R, class V>
  static void list(R& p, V& v) {
    using fuzz::PlanRole;
    v("seed", p.seed, allow::Any{}, "--seed", PlanRole::Draws);
    v("gen", p.gen, allow::Any{}, "", PlanRole::Draws);
    v("cases", p.cases, allow::Between{1, INT_MAX}, "--cases", PlanRole::Draws);
    v("seconds", p.seconds, allow::Positive{}, "--time", PlanRole::Run);
    v("shrink", p.shrink_budget, allow::Any{}, "", PlanRole::Run);
    v("keep_going", p.keep_going, allow::Any{}, "--keep-going", PlanRole::Run);
    v("until_row", p.until_row, allow::Any{}, "--until-row", PlanRole::Run);
    v("command", p.command, allow::Any{}, "", PlanRole::Run);
    v("recover", p.recover, allow::Any{}, "--no-recovery", PlanRole::Run);
    v("differential", p.differential, allow::Any{}, "--differential", PlanRole::Run);
    v("torch_as", p.torch_as, allow::Any{}, "--torch-as", PlanRole::Run);
    v("coverage_guided", p.coverage_guided, allow::Any{}, "--coverage-guided", PlanRole::Run);
    v("corpus", p.corpus_dir, allow::Any{}, "--corpus", PlanRole::Run);
    v("isolation", p.isolation, allow::Any{}, "--no-isolation", PlanRole::Run);
    v("shard_index", p.shard_index, allow::Between{0, 1 << 20}, "--shard", PlanRole::Run);
    v("shard_count", p.shard_count, allow::Between{1, 1 << 20}, "--shard", PlanRole::Draws);
    v("jobs", p.jobs, allow::Between{1, 1024}, "--jobs", PlanRole::Run);
    v("shrink_workers", p.shrink_workers, allow::Between{1, 1024}, "--shrink-workers", PlanRole::Run);
    v("stop_file", p.stop_file, allow::Any{}, "", PlanRole::Run);
    v("findings_db", p.findings_db, allow::Any{}, "--findings-db", PlanRole::Run);
    v("findings_run", p.findings_run, allow::Between{0, INT64_MAX}, "", PlanRole::Run);
  }
};

}  // namespace shardfuzz::harness
