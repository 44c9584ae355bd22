// What `replay` and `fuzz` leave for CI dashboards: a JUnit suite (harness/report/junit.h) and a
// JSON summary of the same results, built from a replay or a campaign, and written atomically.
#pragma once

#include "harness/report/junit.h"
#include "harness/reproducer.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::harness {

// Where to write; empty: not asked for.
struct CiReportFiles {
  std::string junit;
  std::string summary;
};

// Why a file could not be written; empty when it was (or was not asked for).
struct CiReportErrors {
  std::string junit;
  std::string summary;
  bool ok() const { return junit.empty() && summary.empty(); }
};

// Writes each file asked for, the other one even when one fails.
CiReportErrors write_ci_reports(const CiReportFiles& files, const std::vector<JUnitSuite>& suites,
                                const nlohmann::json& summary);

// `replay DIR` on `backend`: one test case per reproducer and profile, failures with the command
// that replays them.
JUnitSuite replay_suite(const std::string& dir, const std::string& backend, const std::vector<ReplayResult>& results);
nlohmann::json replay_summary(const std::string& dir, const std::string& backend,
                              const std::vector<ReplayResult>& results);

// A fuzz campaign as its reports need it (the campaign itself lives in fuzz/, above).
struct CampaignReport {
  struct Finding {
    std::string property;
    std::string message;
    std::string path;  // the reproducer written
    std::string zoo;   // the bug-zoo row blamed
    double seconds_to_find = 0;
    double seconds_to_shrink = 0;
  };
  // A differential campaign's cases, one JUnit test case each.
  struct Case {
    int index = 0;
    uint64_t seed = 0;
    double seconds = 0;
    std::string failure;  // "" passed
    std::string message;
    double torch_seconds = 0, native_seconds = 0;  // each side's share of `seconds`
    std::optional<int64_t> layer_bytes_difference;   // largest per-layer CUDA bytes difference, when compared
    std::vector<std::string> features;               // what the case exercised (harness/scenario/scenario_features.h)
  };
  uint64_t seed = 0;
  std::string out_dir;
  int cases_run = 0;
  double elapsed_seconds = 0;
  int earlier_findings = 0;  // found by the sessions before a resume
  std::vector<Finding> findings;
  std::vector<Case> cases;     // differential campaigns only
  std::string torch_version;   // differential: the torch watched and the profile modelling it
  std::string profile;
  // Against the findings database (fuzz/findings/findings_db.h), when the campaign kept one: each
  // known finding this run touched, by what happened to it.
  struct Known {
    std::string signature, property, zoo, first_seen, last_seen, reproducer_path;
    int64_t count = 0;
  };
  struct Night {
    std::string database;  // its path
    std::vector<Known> fresh, still_failing, fixed, not_replayed;
  };
  std::optional<Night> night;
};

// One test case for the campaign (and, for a differential one, one per case): failed when it has findings, each with its replay command.
JUnitSuite campaign_suite(const CampaignReport& campaign);
nlohmann::json campaign_summary(const CampaignReport& campaign);

}  // namespace shardfuzz::harness
