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
#include "harness/report/ci_reports.h"
#include "harness/backends/backend.h"
#include "harness/backends/threads/threads_backend.h"
#include "harness/scenario/scenario.h"

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace shardfuzz::fuzz {

// What runs the campaign and where it writes; what it does is its CampaignPlan (fuzz/campaign_state.h),
// the part a resume reads back.
struct CampaignOptions : CampaignPlan {
  std::string out_dir = "findings";
  // What runs each case. Blame always runs the native runtime: a finding on torch that no native
  // profile reproduces is unattributed (a divergence to explain).
  std::shared_ptr<harness::Backend> backend = harness::make_threads_backend();
  // Differential campaigns (CampaignPlan::differential): the two sides. `backend` is its torch side.
  std::shared_ptr<harness::differential::Differential> torch_and_native;
  std::shared_ptr<harness::Backend> native;  // what torch_and_native runs natively; kept alive here
  // Continue this saved campaign (its plan replaces the one above).
  std::optional<CampaignState> resume;
};

struct Finding {
  harness::Scenario minimal;
  std::string property;
  std::string message;
  uint64_t case_seed = 0;
  int size = 0;
  std::string path;  // the reproducer written
  std::string report;  // its HTML report beside it ("" when it could not be written)
  std::string zoo;   // the bug-zoo row blamed (harness/zoo), "unattributed" when none; a differential
                     // finding's class: torch-changed, native-model-wrong, property-failed-on-both
  bool differential = false;
  std::string blamed;  // the switches blamed, described
  double seconds_to_find = 0;    // campaign start to the failing case
  double seconds_to_shrink = 0;  // and to the written reproducer
  ShrinkResult shrink;
};

// One case of a differential campaign, for its per-case JUnit and the summary.
using CaseOutcome = harness::CampaignReport::Case;

struct CampaignResult {
  int cases_run = 0;  // over all sessions of the campaign
  int cases_this_session = 0;
  int earlier_findings = 0;  // found by the sessions before a resume
  double elapsed_seconds = 0;
  std::vector<Finding> findings;
  int repeated_failures = 0;       // differential campaigns: cases failing as an earlier finding did
  std::vector<CaseOutcome> cases;  // differential campaigns: every case of this session
  std::string torch_version;       // differential campaigns: the torch they watched, and its model
  std::string profile;
  // A whole campaign's night against its findings database: new, still failing, fixed.
  std::optional<harness::CampaignReport::Night> night;
};

// The seed and size of case k of a campaign seeded with `seed`.
uint64_t case_seed(uint64_t campaign_seed, int k);
int case_size(int k);

// The first failing property's name, or nullopt (the predicate shrinking preserves), on `backend`.
std::optional<std::string> first_failing_property(const harness::Scenario& scenario, std::string* message = nullptr,
                                                  harness::Backend& backend = harness::threads_backend());

CampaignResult run_campaign(const CampaignOptions& options, std::ostream& out);

class CasePool;

// Writes the reproducer for a shrunk failure into `dir` (expected verdicts under every profile, from
// `pool` side by side when given, else from `runner`: isolated when it is; nullptr: in this process).
std::string write_reproducer(const harness::Scenario& minimal, const std::string& property, const std::string& message,
                             const std::string& dir, const std::string& found_by, const std::string& zoo = "",
                             CaseRunner* runner = nullptr, const nlohmann::json& differential = nullptr,
                             CasePool* pool = nullptr);

// The options a saved campaign ran with, to resume it writing into `out_dir`.
CampaignOptions options_to_resume(const CampaignState& state, const std::string& out_dir);

}  // namespace shardfuzz::fuzz
