// The campaign's state on disk, `OUT/.campaign.json`, so `shardfuzz fuzz --resume OUT` continues a
// campaign whose harness was killed (SIGKILL included). Case k is drawn from (seed, k) alone (a
// coverage-guided campaign's corpus is a folder of its own, replayed when it resumes), so its state
// is what was asked (the plan, fuzz/campaign/plan.h), how far it got (the next case, the time
// spent), and what it found (each reproducer written). It is rewritten atomically (temporary file +
// rename) after every case, and a case's reproducer is written before the case counts as done: a
// kill loses at most the case in progress, which resume runs again (same seed, same reproducer
// name), and leaves no half-written file. Reader and writer are visitors over the field lists.
#pragma once

#include "fuzz/campaign/plan.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardfuzz::fuzz {

struct CampaignFindingEntry {
  int case_index = 0;
  uint64_t case_seed = 0;
  std::string property;
  std::string path;  // the reproducer
  std::string zoo;
};

struct CampaignState {
  CampaignPlan plan;  // what was asked
  std::string backend = "threads";
  // How far it got.
  int next_case = 0;              // cases [0, next_case) are done, their findings written
  int cases_run = -1;             // how many of them this campaign ran (a shard's share; -1: next_case)
  double elapsed_seconds = 0;     // wall clock spent over all sessions
  int sessions = 1;               // 1 + the number of resumes
  bool finished = false;          // it stopped by its own limits (not killed)
  std::vector<CampaignFindingEntry> findings;
};

inline constexpr const char* kCampaignStateFile = ".campaign.json";  // hidden: replay walks *.json
// The campaign's findings database (fuzz/findings/findings_db.h) in its output folder, unless
// --findings-db names one the nightly job keeps between nights.
inline constexpr const char* kFindingsDbFile = "findings.db";

std::string campaign_state_path(const std::string& dir);
// Atomic: readers see the old state or the new one.
void save_campaign_state(const std::string& dir, const CampaignState& state);
// Throws std::runtime_error naming the file when it is missing or unreadable, and
// std::invalid_argument naming the file and the field's path when a field is malformed. Reads
// schema 2, and schema 1 (before the plan had its field list) by moving its keys into place.
CampaignState load_campaign_state(const std::string& dir);
// Removes temporary files an interrupted atomic write left in `dir` (NAME.tmp.PID).
int remove_stale_temporaries(const std::string& dir);

}  // namespace shardfuzz::fuzz

namespace shardfuzz::harness {

template <>
struct Fields<fuzz::CampaignFindingEntry> {
  static constexpr const char* what = "a finding of the campaign";
  template <class R, class V>
  static void visit(R& f, V& v) {
    v("case", f.case_index, allow::Between{0, INT_MAX}, "the case's index");
    v("case_seed", f.case_seed, allow::Any{}, "the case's seed");
    v("property", f.property, allow::Any{}, "the property it failed");
    v("path", f.path, allow::Any{}, "its reproducer");
    v("zoo", f.zoo, allow::Any{}, "the bug-zoo row blamed");
  }
};

template <>
struct Fields<fuzz::CampaignState> {
  static constexpr const char* what = "a campaign state";
  template <class R, class V>
  static void visit(R& s, V& v) {
    v("plan", s.plan, allow::Any{}, "what was asked");
    v("backend", s.backend, allow::Any{}, "what ran the cases");
    v("next_case", s.next_case, allow::Between{0, INT_MAX}, "cases before it are done");
    v("cases_run", s.cases_run, allow::Between{-1, INT_MAX}, "this shard's share of them");
    v("elapsed_seconds", s.elapsed_seconds, allow::NonNegative{}, "over all sessions");
    v("sessions", s.sessions, allow::Between{1, INT_MAX}, "1 + the resumes");
    v("finished", s.finished, allow::Any{}, "stopped by its own limits");
    v("findings", s.findings, allow::Any{}, "each reproducer written");
  }
};

}  // namespace shardfuzz::harness
