// Splitting one campaign (issue 24): four --shard processes then merge find the same finding
// signatures as the unsplit campaign with the same seed and case count; --jobs runs the same cases
// whatever N and stops at the lowest failing case without --keep-going; merge refuses folders of
// different campaigns naming the folder and the field. Forks: needs a single-threaded test process
// (ctest runs each test in its own).
#include "fuzz/campaign/campaign.h"
#include "fuzz/campaign/merge.h"
#include "fuzz/campaign/state.h"
#include "fuzz/findings/findings_db.h"
#include "fuzz/campaign/jobs.h"
#include "harness/files/temp_dir.h"
#include "harness/isolation/child_outcome.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace shardfuzz::fuzz {
namespace {

#define REQUIRE_SINGLE_THREADED()                  \
  if (harness::isolation::thread_count() > 1) \
  GTEST_SKIP() << "the process has other threads (run through ctest)"

// The seed leak's profile finds something in most small campaigns; shrinking by steps only (no
// clock) makes each minimal case the same wherever it is shrunk.
CampaignOptions leak_hunt(const std::string& dir) {
  CampaignOptions o;
  o.gen.profile = "torch-2.9";
  o.seed = 11;
  o.cases = 12;
  o.keep_going = true;
  o.out_dir = dir;
  o.shrink_budget = {30, 1e6};
  o.isolation.reset();
  return o;
}

// Every shard's log of a --jobs campaign, for a failure message.
std::string shard_logs(const std::string& dir) {
  std::ostringstream os;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/jobs")) {
    std::ifstream in(e.path() / "fuzz.log");
    os << "--- " << e.path().string() << "/fuzz.log\n" << in.rdbuf();
  }
  return os.str();
}

std::set<std::string> signatures_in(const std::string& db_path) {
  std::set<std::string> out;
  for (const auto& row : findings::FindingsDb(db_path, findings::FindingsDb::Access::ReadOnly).list())
    out.insert(row.signature);
  return out;
}

std::set<std::pair<int, std::string>> cases_failing(const CampaignState& st) {
  std::set<std::pair<int, std::string>> out;
  for (const auto& f : st.findings) out.insert({f.case_index, f.property});
  return out;
}

TEST(Fleet, FourShardsThenMergeFindTheSameSignaturesAsOneCampaign) {
  REQUIRE_SINGLE_THREADED();
  harness::TempDir whole("shardfuzz-whole"), split("shardfuzz-split");
  std::ostringstream log;
  const CampaignResult one = run_campaign(leak_hunt(whole.path()), log);
  ASSERT_FALSE(one.findings.empty()) << log.str();
  std::vector<std::string> dirs;
  for (int i = 0; i < 4; ++i) {
    CampaignOptions o = leak_hunt(split.path() + "/shard-" + std::to_string(i));
    o.shard_index = i;
    o.shard_count = 4;
    const CampaignResult r = run_campaign(o, log);
    EXPECT_EQ(r.cases_run, 3) << "cases " << i << ", " << i + 4 << ", " << i + 8;
    dirs.push_back(o.out_dir);
  }
  const MergedCampaign m = merge_campaigns(dirs, split.path() + "/merged");
  EXPECT_EQ(m.cases_run, 12);
  EXPECT_TRUE(m.shards_missing.empty());
  EXPECT_TRUE(m.shards_unfinished.empty());
  EXPECT_EQ(cases_failing(m.state), cases_failing(load_campaign_state(whole.path())));
  EXPECT_EQ(signatures_in(split.path() + "/merged/findings.db"), signatures_in(whole.path() + "/findings.db"));
  // Every reproducer came along, readable from the merged folder.
  for (const auto& f : m.state.findings) {
    EXPECT_EQ(f.path.rfind(split.path() + "/merged/", 0), 0u) << f.path;
    EXPECT_TRUE(std::ifstream(f.path).good()) << f.path;
  }
  // The merged state reloads as one campaign.
  const CampaignState back = load_campaign_state(split.path() + "/merged");
  EXPECT_EQ(back.plan.shard_count, 1);
  EXPECT_EQ(back.cases_run, 12);
}

TEST(Fleet, MergeRefusesFoldersOfAnotherCampaignOrTheSameShardTwice) {
  REQUIRE_SINGLE_THREADED();
  harness::TempDir a("shardfuzz-a"), b("shardfuzz-b");
  std::ostringstream log;
  CampaignOptions o = leak_hunt(a.path());
  o.gen.profile = "strict";
  o.cases = 2;
  o.shard_count = 2;
  run_campaign(o, log);
  o.out_dir = b.path();
  o.seed = 12;
  run_campaign(o, log);
  try {
    merge_campaigns({a.path(), b.path()}, a.path() + "/merged");
    FAIL() << "merged two campaigns";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(b.path() + " is not a shard of the campaign in " + a.path() + ": seed: 12 vs 11"),
              std::string::npos)
        << e.what();
  }
  try {
    merge_campaigns({a.path(), a.path()}, a.path() + "/merged");
    FAIL() << "merged one shard twice";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("are both shard 0 of 2"), std::string::npos) << e.what();
  }
}

TEST(Fleet, JobsRunTheSameCasesAndStopAtTheLowestFailingCase) {
  REQUIRE_SINGLE_THREADED();
  harness::TempDir whole("shardfuzz-one-job"), jobs("shardfuzz-jobs");
  std::ostringstream log;
  CampaignOptions o = leak_hunt(whole.path());
  o.keep_going = false;
  o.cases = 30;
  const CampaignResult one = run_campaign(o, log);
  ASSERT_EQ(one.findings.size(), 1u) << log.str();
  const int first = load_campaign_state(whole.path()).findings.at(0).case_index;

  o.out_dir = jobs.path();
  o.jobs = 3;
  const CampaignResult three = run_parallel_campaign(o, log);
  const CampaignState st = load_campaign_state(jobs.path());
  ASSERT_FALSE(st.findings.empty()) << log.str();
  EXPECT_EQ(st.findings.front().case_index, first) << "the lowest failing case, as with one job\n" << shard_logs(jobs.path());
  EXPECT_EQ(st.findings.front().property, one.findings.front().property);
  for (const auto& f : st.findings) EXPECT_LE(f.case_index, first + 2) << "no shard runs on past the first finding";
  EXPECT_LE(three.cases_run, first + 3);
  EXPECT_EQ(st.plan.jobs, 3);

  // With --keep-going and --cases, every case runs once, whatever the number of jobs.
  harness::TempDir all("shardfuzz-jobs-all");
  CampaignOptions k = leak_hunt(all.path());
  k.gen.profile = "strict";
  k.cases = 16;
  k.jobs = 4;
  const CampaignResult r = run_parallel_campaign(k, log);
  EXPECT_EQ(r.cases_run, 16);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(load_campaign_state(job_dir(all.path(), i)).cases_run, 4) << i;
}

}  // namespace
}  // namespace shardfuzz::fuzz
