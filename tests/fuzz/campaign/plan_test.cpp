// The campaign plan's field list (fuzz/campaign/plan.h): one list drives the state file's reader
// and writer, the command line's range checks, and merge's comparison.
#include "fuzz/campaign/plan.h"
#include "fuzz/campaign/state.h"
#include "harness/files/temp_dir.h"
#include "harness/files/write_file.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace shardfuzz::fuzz {
namespace {

CampaignPlan unusual_plan() {
  CampaignPlan p;
  p.gen = {3, 4, "torch-2.9", 2, 1, true, {"hang", "oom"}};
  p.seed = 99;
  p.cases = 17;
  p.seconds = 12.5;
  p.shrink_budget = {40, 7.5};
  p.keep_going = true;
  p.until_row = "S3";
  p.command = "shardfuzz fuzz --seed 99";
  p.recover = false;
  p.differential = true;
  p.torch_as = "torch-2.9";
  p.coverage_guided = true;
  p.corpus_dir = "corpus";
  p.isolation = harness::isolation::Limits{std::chrono::milliseconds(2500), int64_t{512} << 20};
  p.shard_index = 2;
  p.shard_count = 5;
  p.jobs = 3;
  p.shrink_workers = 4;
  p.stop_file = "OUT/.stop";
  p.findings_db = "nightly.db";
  p.findings_run = 8;
  return p;
}

std::string thrown_by(const CampaignPlan& p, const PlanNaming& naming = {}) {
  try {
    check_plan(p, naming);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(CampaignPlan, EveryFieldSurvivesTheStateFile) {
  const CampaignPlan p = unusual_plan();
  const CampaignPlan back = plan_from_json(plan_to_json(p), "plan");
  EXPECT_EQ(plan_to_json(back), plan_to_json(p));
  EXPECT_EQ(back.isolation->wall.count(), 2500);
  EXPECT_EQ(back.gen.fault_kinds, p.gen.fault_kinds);
  CampaignPlan none = p;
  none.isolation.reset();
  none.cases.reset();
  EXPECT_FALSE(plan_from_json(plan_to_json(none), "plan").isolation) << "no isolation stays none";
  EXPECT_FALSE(plan_from_json(plan_to_json(none), "plan").cases);
}

TEST(CampaignPlan, RangeChecksNameTheFlagOrThePath) {
  CampaignPlan p;
  p.jobs = 2000;
  EXPECT_EQ(thrown_by(p), "--jobs: 2000 outside [1, 1024]");
  EXPECT_EQ(thrown_by(p, {false, "f.json: plan."}), "f.json: plan.jobs: 2000 outside [1, 1024]");
  p = {};
  p.gen.world = 9;
  EXPECT_EQ(thrown_by(p), "--world: 9 outside [0, 8]");
  EXPECT_EQ(thrown_by(p, {false, ""}), "gen.world: 9 outside [0, 8]");
  p = {};
  p.shard_index = 4;
  p.shard_count = 4;
  EXPECT_NE(thrown_by(p).find("--shard: 4 is not an index I in [0, N) of N = 4"), std::string::npos);
  p = {};
  p.gen.profile = "torch-3.0";
  EXPECT_EQ(thrown_by(p).rfind("--profile: ", 0), 0u) << thrown_by(p);
  p = {};
  p.gen.fault_kinds = {"meteor"};
  EXPECT_EQ(thrown_by(p), "--fault-kinds: 'meteor' is not a fault kind");
  p.gen.fault_kinds = {"abort"};
  p.isolation.reset();
  EXPECT_NE(thrown_by(p).find("needs isolation"), std::string::npos);
  p = {};
  p.isolation->memory_bytes = int64_t{10} << 20;
  EXPECT_EQ(thrown_by(p), "--case-memory-mb: 10 MiB outside [64, 4194304]");
  p = {};
  p.cases = 0;
  EXPECT_EQ(thrown_by(p), "--cases: 0 outside [1, 2147483647]");
  p = {};
  p.shrink_budget.max_seconds = -1;
  EXPECT_EQ(thrown_by(p), "--shrink-seconds: -1 must be finite and > 0");
  EXPECT_EQ(thrown_by(unusual_plan()), "");
}

TEST(CampaignPlan, ReadingIsStrict) {
  nlohmann::json j = plan_to_json(CampaignPlan{});
  j["jobz"] = 2;
  try {
    plan_from_json(j, "plan");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("plan.jobz: unknown key"), std::string::npos) << e.what();
  }
  j = plan_to_json(CampaignPlan{});
  j["gen"]["max_world"] = "eight";
  EXPECT_THROW(plan_from_json(j, "plan"), std::invalid_argument);
}

TEST(CampaignPlan, ShardsOfOneCampaignDifferOnlyInHowTheyRun) {
  const CampaignPlan a = unusual_plan();
  CampaignPlan b = a;
  b.shard_index = 0;
  b.jobs = 1;
  b.stop_file.clear();
  b.findings_run = 0;
  b.command = "other";
  b.isolation.reset();
  EXPECT_EQ(plan_difference(a, b), "");
  b.seed = 7;
  EXPECT_EQ(plan_difference(a, b), "seed: 7 vs 99");
  b = a;
  b.gen.max_world = 8;
  EXPECT_EQ(plan_difference(a, b), "gen.max_world: 8 vs 4");
  b = a;
  b.cases.reset();
  EXPECT_EQ(plan_difference(a, b), "cases: null vs 17");
  b = a;
  b.shard_count = 6;
  EXPECT_EQ(plan_difference(a, b), "shard_count: 6 vs 5");
}

// A state written before the plan had its field list (schema 1, the plan's keys flat at the top)
// still resumes.
TEST(CampaignState, ASchemaOneFileIsReadIntoThePlan) {
  harness::TempDir dir("shardfuzz-schema1");
  harness::write_file_atomically(campaign_state_path(dir.path()), R"({
    "schema": "shardfuzz-campaign/1", "seed": 5,
    "gen": {"world": 2, "max_world": 8, "profile": "strict", "max_blocks": 4, "max_steps": 3, "faults": false, "fault_kinds": []},
    "cases": null, "seconds": 30.0, "shrink_steps": 50, "shrink_seconds": 9.0, "keep_going": true, "recover": true,
    "until_row": "", "differential": false, "torch_as": "", "coverage_guided": false, "corpus": "", "command": "c",
    "backend": "threads", "isolate": true, "case_timeout_ms": 4000, "case_memory_bytes": 1073741824,
    "shard": {"index": 1, "count": 3}, "jobs": 1, "shrink_workers": 2, "stop_file": "", "findings_db": "",
    "findings_run": 0, "next_case": 7, "cases_run": 2, "elapsed_seconds": 3.5, "sessions": 1, "finished": false,
    "findings": [{"case": 4, "case_seed": 11, "property": "liveness", "path": "x.json", "zoo": "S3"}]})");
  const CampaignState s = load_campaign_state(dir.path());
  EXPECT_EQ(s.plan.seed, 5u);
  EXPECT_EQ(s.plan.gen.world, 2);
  EXPECT_FALSE(s.plan.cases);
  EXPECT_EQ(*s.plan.seconds, 30.0);
  EXPECT_EQ(s.plan.shrink_budget.max_steps, 50);
  EXPECT_EQ(s.plan.isolation->wall.count(), 4000);
  EXPECT_EQ(s.plan.shard_index, 1);
  EXPECT_EQ(s.plan.shard_count, 3);
  EXPECT_EQ(s.plan.shrink_workers, 2);
  EXPECT_EQ(s.next_case, 7);
  ASSERT_EQ(s.findings.size(), 1u);
  EXPECT_EQ(s.findings[0].zoo, "S3");
  save_campaign_state(dir.path(), s);  // written back as schema 2, read the same
  EXPECT_EQ(plan_to_json(load_campaign_state(dir.path()).plan), plan_to_json(s.plan));
}

}  // namespace
}  // namespace shardfuzz::fuzz
