// What a campaign gives back: each finding (its minimal scenario, blame and files) and the result.
#pragma once

#include "fuzz/shrink/shrink.h"
#include "harness/differential/differential.h"
#include "harness/report/ci_reports.h"
#include "harness/scenario/scenario.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::fuzz {

struct Finding {
  harness::Scenario minimal;
  std::string property;
  std::string message;
  uint64_t case_seed = 0;
  int case_index = 0;
  int size = 0;
  std::string path;    // the reproducer written
  std::string report;  // its HTML report beside it ("" when it could not be written)
  std::string zoo;     // the bug-zoo row blamed (harness/zoo), "unattributed" when none; a differential
                       // finding's class slug (torch-changed, native-model-wrong, property-failed-on-both)
  // A differential finding's class (nullopt: a finding of one backend).
  std::optional<harness::differential::Attribution::Kind> attribution;
  std::string blamed;  // the switches blamed, described
  double seconds_to_find = 0;    // campaign start to the failing case
  double seconds_to_shrink = 0;  // and to the written reproducer
  ShrinkResult shrink;
  // Replays of the written case after shrinking, and how many failed as the finding: fewer than all
  // is a flaky finding (a verdict that depends on thread timing), labelled with its rate.
  int replays = 0;
  int replay_failures = 0;
  bool differential() const { return attribution.has_value(); }
  bool flaky() const { return replay_failures < replays; }
  std::string flakiness() const;  // "flaky: failed 2 of 5 replays", "" when deterministic
};

// How often a finding's case is replayed after shrinking, and how many tries a shrink candidate of
// a flaky case gets (it keeps the failure when any fails).
inline constexpr int kReplays = 5;
inline constexpr int kReplaysOfADeadProcess = 2;  // a hang costs the case's wall-clock limit each time
inline constexpr int kFlakyTries = 3;

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

}  // namespace shardfuzz::fuzz
