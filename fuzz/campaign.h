// The fuzz campaign, in one obvious place: draw case k from its own seed, run it on the threads
// backend, check every property; on the first failure, shrink it (same property, under a budget),
// compute its verdict under every profile, and write the minimal reproducer atomically. Cases run
// isolated in child processes by default (fuzz/case_runner.h); the campaign's state is saved in
// the output folder after every case, so a killed campaign resumes (fuzz/campaign_state.h).
#pragma once

#include "fuzz/campaign_state.h"
#include "fuzz/case_runner.h"
#include "fuzz/gen/gen_config.h"
#include "fuzz/shrink.h"
#include "harness/backend.h"
#include "harness/scenario.h"

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace shardfuzz::fuzz {

struct CampaignOptions {
  GenConfig gen;
  uint64_t seed = 1;
  std::optional<int> cases;       // stop after this many cases
  std::optional<double> seconds;  // or after this much wall clock (whichever comes first)
  std::string out_dir = "findings";
  ShrinkBudget shrink_budget{300, 120.0};
  bool keep_going = false;  // continue after a finding (default: stop at the first)
  // Hunt for one bug-zoo row: findings blamed on another row are reported and passed over.
  std::string until_row;
  std::string command;      // the command line, recorded in reproducers
  // What runs each case (nullptr: the threads backend). Blame always runs the native runtime: a
  // finding on torch that no native profile reproduces is unattributed (a divergence to explain).
  std::shared_ptr<harness::Backend> backend;
  // Each native run in a child process under these limits (nullopt: in this process).
  std::optional<harness::isolation::Limits> isolation = harness::isolation::Limits{};
  // Continue this saved campaign (its options replace the ones above, except out_dir).
  std::optional<CampaignState> resume;
};

struct Finding {
  harness::Scenario minimal;
  std::string property;
  std::string message;
  uint64_t case_seed = 0;
  int size = 0;
  std::string path;  // the reproducer written
  std::string zoo;   // the bug-zoo row blamed (harness/zoo), "unattributed" when none
  std::string blamed;  // the switches blamed, described
  double seconds_to_find = 0;    // campaign start to the failing case
  double seconds_to_shrink = 0;  // and to the written reproducer
  ShrinkResult shrink;
};

struct CampaignResult {
  int cases_run = 0;  // over all sessions of the campaign
  int cases_this_session = 0;
  int earlier_findings = 0;  // found by the sessions before a resume
  double elapsed_seconds = 0;
  std::vector<Finding> findings;
};

// The seed and size of case k of a campaign seeded with `seed`.
uint64_t case_seed(uint64_t campaign_seed, int k);
int case_size(int k);

// The first failing property's name, or nullopt (the predicate shrinking preserves), on `backend`
// (nullptr: the threads backend).
std::optional<std::string> first_failing_property(const harness::Scenario& scenario, std::string* message = nullptr,
                                                  harness::Backend* backend = nullptr);

CampaignResult run_campaign(const CampaignOptions& options, std::ostream& out);

// Writes the reproducer for a shrunk failure into `dir` (expected verdicts under every profile, from
// `runner`: isolated when it is; nullptr: in this process).
std::string write_reproducer(const harness::Scenario& minimal, const std::string& property, const std::string& message,
                             const std::string& dir, const std::string& found_by, const std::string& zoo = "",
                             CaseRunner* runner = nullptr);

// The options a saved campaign ran with, to resume it writing into `out_dir`.
CampaignOptions options_to_resume(const CampaignState& state, const std::string& out_dir);

}  // namespace shardfuzz::fuzz
