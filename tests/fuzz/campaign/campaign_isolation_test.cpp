// The campaign survives its cases: with isolation, a case that aborts its process is a finding of
// process_survives written with its scenario, and the campaign goes on; its state is saved after
// every case, so a campaign killed with SIGKILL resumes and ends with exactly the findings of an
// uninterrupted run, every file whole. Needs a single-threaded test process (ctest runs each test
// in its own).
#include "fuzz/campaign/campaign.h"
#include "fuzz/campaign/write_reproducer.h"
#include "fuzz/campaign/state.h"
#include "harness/isolation/child_outcome.h"
#include "harness/reproducer.h"
#include "harness/scenario/scenario_json.h"
#include "harness/scenario/standard_scenarios.h"
#include "harness/files/temp_dir.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>

namespace shardfuzz::fuzz {
namespace {

using namespace std::chrono_literals;

#define REQUIRE_SINGLE_THREADED()                  \
  if (harness::isolation::thread_count() > 1) \
  GTEST_SKIP() << "the process has other threads (run through ctest)"

std::set<std::string> reproducers_in(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name[0] != '.' && name.rfind(kFindingsDbFile, 0) != 0) names.insert(name);  // the database: not a report
  }
  return names;
}

TEST(CampaignIsolation, ACaseThatAbortsItsProcessIsAFindingAndTheCampaignGoesOn) {
  REQUIRE_SINGLE_THREADED();
  harness::TempDir dir("shardfuzz-isolation");
  CampaignOptions o;
  o.gen.faults = true;
  o.gen.fault_kinds = {"abort"};
  o.gen.profile = "strict";
  o.seed = 3;
  o.cases = 6;
  o.keep_going = true;
  o.out_dir = dir.path();
  o.shrink_budget = {20, 60.0};
  std::ostringstream log;
  const CampaignResult r = run_campaign(o, log);
  EXPECT_EQ(r.cases_run, 6) << log.str();
  ASSERT_FALSE(r.findings.empty()) << log.str();
  for (const Finding& f : r.findings) {
    EXPECT_EQ(f.property, kProcessSurvives);
    EXPECT_NE(f.message.find("died of SIGABRT"), std::string::npos) << f.message;
    EXPECT_NE(f.message.find("injected abort: rank"), std::string::npos) << f.message;
    const harness::Reproducer rep = harness::load_reproducer(f.path);
    ASSERT_FALSE(rep.scenario.faults.empty());
    for (const auto& fault : rep.scenario.faults) EXPECT_TRUE(fault.is(harness::CollectiveFault::Kind::Abort));
    EXPECT_EQ(rep.expected.at("strict"), kProcessSurvives);
  }
  // Replayable: each is replayed in a child, and dies again.
  for (const harness::ReplayResult& res : harness::replay_dir(dir.path()))
    EXPECT_TRUE(res.ok()) << res.file << " [" << res.profile << "] got " << res.actual << ": " << res.message;
  const CampaignState st = load_campaign_state(dir.path());
  EXPECT_TRUE(st.finished);
  EXPECT_EQ(st.next_case, 6);
  EXPECT_EQ(st.findings.size(), r.findings.size());
}

CampaignOptions leak_hunt(const std::string& dir) {
  CampaignOptions o;
  o.gen.profile = "torch-2.9";
  o.seed = 5;
  o.cases = 8;
  o.keep_going = true;
  o.out_dir = dir;
  o.shrink_budget = {40, 60.0};
  return o;
}

TEST(CampaignResume, ACampaignKilledWithSigkillResumesToTheSameFindings) {
  REQUIRE_SINGLE_THREADED();
  harness::TempDir whole("shardfuzz-whole"), killed("shardfuzz-killed");
  std::ostringstream log;
  const CampaignResult reference = run_campaign(leak_hunt(whole.path()), log);
  ASSERT_FALSE(reference.findings.empty());

  // The same campaign in a child, killed once it has done a case or two.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::ostringstream quiet;
    run_campaign(leak_hunt(killed.path()), quiet);
    ::_exit(0);
  }
  const auto give_up = std::chrono::steady_clock::now() + 120s;
  for (;;) {
    std::this_thread::sleep_for(20ms);
    try {
      if (load_campaign_state(killed.path()).next_case >= 2) break;
    } catch (const std::exception&) {  // not written yet
    }
    ASSERT_LT(std::chrono::steady_clock::now(), give_up);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  const CampaignState interrupted = load_campaign_state(killed.path());
  ASSERT_FALSE(interrupted.finished);

  const CampaignResult resumed = run_campaign(options_to_resume(interrupted, killed.path()), log);
  EXPECT_EQ(resumed.cases_run, 8);
  const CampaignState st = load_campaign_state(killed.path());
  EXPECT_TRUE(st.finished);
  EXPECT_EQ(st.sessions, 2);
  EXPECT_EQ(st.findings.size(), reference.findings.size());
  EXPECT_EQ(reproducers_in(killed.path()), reproducers_in(whole.path()));
  for (const auto& name : reproducers_in(killed.path())) {  // every file whole: each reproducer and its report
    const std::string path = killed.path() + "/" + name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) {
      EXPECT_NO_THROW(harness::load_reproducer(path)) << name;
      EXPECT_TRUE(std::filesystem::exists(path.substr(0, path.size() - 5) + ".html")) << name << " has no report";
    } else {
      std::ifstream in(path);
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      EXPECT_EQ(text.rfind("<!DOCTYPE html>", 0), 0u) << name;
      EXPECT_NE(text.find("</html>"), std::string::npos) << name << " is cut short";
    }
  }
}

TEST(CampaignState, AMalformedStateFileNamesTheField) {
  harness::TempDir dir("shardfuzz-state");
  CampaignState st;
  st.next_case = 4;
  st.plan.recover = false;
  save_campaign_state(dir.path(), st);
  EXPECT_EQ(load_campaign_state(dir.path()).next_case, 4);
  EXPECT_FALSE(load_campaign_state(dir.path()).plan.recover) << "a --no-recovery campaign resumes without recovery";
  // What loading a state file with `text` throws ("" when it loads).
  const auto refusal = [&](const std::string& text) -> std::string {
    harness::write_file_atomically(campaign_state_path(dir.path()), text);
    try {
      load_campaign_state(dir.path());
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  const std::string wrong_type = refusal(R"({"schema": "shardfuzz-campaign/2", "plan": {"seed": "seven"}})");
  EXPECT_NE(wrong_type.find(".campaign.json: plan.seed: expected an unsigned 64-bit integer, got the string \"seven\""),
            std::string::npos)
      << wrong_type;
  const std::string out_of_range = refusal(R"({"schema": "shardfuzz-campaign/2", "plan": {"jobs": 0}, "next_case": 1})");
  EXPECT_NE(out_of_range.find("plan.jobs: 0 outside [1, 1024]"), std::string::npos) << out_of_range;
  EXPECT_THROW(load_campaign_state(dir.path() + "/nowhere"), std::runtime_error);
}

}  // namespace
}  // namespace shardfuzz::fuzz

namespace shardfuzz::fuzz {
namespace {

// Two findings whose minimal scenarios share the seed's last digits (mutants of one corpus
// scenario keep its seed; found by a coverage-guided campaign that lost its first reproducer):
// the second reproducer takes a suffix, the first is left as written; the second written again is
// the same finding and keeps its name.
TEST(Reproducers, ASecondFindingWithTheSameNameDoesNotOverwriteTheFirst) {
  harness::TempDir dir("shardfuzz-names");
  harness::Scenario sc = harness::standard_small_scenario("strict");
  sc.world_size = 1;
  sc.steps = 1;
  const std::string first = write_reproducer(sc, "parity_with_reference", "first", dir.path(), "test");
  sc.steps = 2;
  const std::string second = write_reproducer(sc, "parity_with_reference", "second", dir.path(), "test");
  // The same finding written again (a case run again after a kill, on --resume) keeps its name.
  EXPECT_EQ(write_reproducer(sc, "parity_with_reference", "second", dir.path(), "test"), second);
  sc.steps = 3;
  const std::string third = write_reproducer(sc, "parity_with_reference", "third", dir.path(), "test");
  EXPECT_NE(first, second);
  EXPECT_EQ(second, first.substr(0, first.size() - 5) + "-2.json");
  EXPECT_EQ(third, first.substr(0, first.size() - 5) + "-3.json");
  EXPECT_EQ(harness::load_reproducer(first).message, "first");
  EXPECT_EQ(harness::load_reproducer(second).message, "second");
  EXPECT_EQ(harness::load_reproducer(second).scenario.name, harness::load_reproducer(second).name);
}

// A shrink on three isolated workers at once (--shrink-workers) ends on the minimal case of the
// one-at-a-time shrink, with the same accepted steps: the seed leak hunted for its row, so every
// candidate is blamed on its own worker too.
TEST(CampaignIsolation, AShrinkOnThreeWorkersEndsOnTheMinimalCaseOfOne) {
  REQUIRE_SINGLE_THREADED();
  std::vector<Finding> found;
  for (const int workers : {1, 3}) {
    harness::TempDir dir("shardfuzz-shrink-workers");
    CampaignOptions o;
    o.gen.profile = "torch-2.9";
    o.until_row = "5";
    o.seed = 4;
    o.cases = 12;
    o.out_dir = dir.path();
    o.shrink_budget = {400, 1e6};
    o.shrink_workers = workers;
    std::ostringstream log;
    const CampaignResult r = run_campaign(o, log);
    ASSERT_EQ(r.findings.size(), 1u) << log.str();
    found.push_back(r.findings.front());
    EXPECT_EQ(harness::isolation::thread_count(), 1) << "the pool's threads are joined";
  }
  EXPECT_EQ(harness::to_json_text(found[0].minimal), harness::to_json_text(found[1].minimal));
  EXPECT_EQ(found[0].shrink.steps_accepted, found[1].shrink.steps_accepted);
  EXPECT_EQ(found[0].zoo, found[1].zoo);
  EXPECT_GE(found[1].shrink.steps_tried, found[0].shrink.steps_tried) << "runs ahead are extra runs, not fewer";
}

}  // namespace
}  // namespace shardfuzz::fuzz
