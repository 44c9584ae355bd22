// The campaign's state on disk, `OUT/.campaign.json`, so `shardfuzz fuzz --resume OUT` continues a
// campaign whose harness was killed (SIGKILL included). Case k is drawn from (seed, k) alone (a
// coverage-guided campaign's corpus is a folder of its own, replayed when it resumes), so its state is what was asked (seed, generator, limits, options),
// how far it got (the next case, the time spent), and what it found (each reproducer written). It
// is rewritten atomically (temporary file + rename) after every case, and a case's reproducer is
// written before the case counts as done: a kill loses at most the case in progress, which resume
// runs again (same seed, same reproducer name), and leaves no half-written file.
#pragma once

#include "fuzz/gen/gen_config.h"
#include "fuzz/shrink.h"
#include "harness/isolation/child_outcome.h"

#include <cstdint>
#include <optional>
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

// What a campaign was asked to do: everything that decides which cases it draws and what it does
// with a failure. The command line fills it; the state file keeps it for a resume.
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
  // Coverage guidance (fuzz/coverage_guidance.h): part of the cases are mutants of corpus scenarios
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
  // --jobs N: the campaign ran as N local shards (OUT/jobs/I, fuzz/parallel_campaign.h).
  int jobs = 1;
  // Isolated case workers a shrink runs its candidates on at once (fuzz/case_pool.h; the minimal
  // case does not depend on it). Isolation only; 1 when differential.
  int shrink_workers = 1;
  // A parallel campaign that stops at its first finding: a case past the index written in this file
  // (by the parent when a shard claims a failing case) is not run and a shrink of one is dropped,
  // so no shard runs on past the first finding. A shard claims a case in OUT/jobs/I/.failing
  // (kFailingCaseFile) before it shrinks it.
  std::string stop_file;
  // The findings database (fuzz/campaign_findings_db.h): "" for OUT/findings.db, or a path the
  // nightly job keeps between nights; findings_run > 0: record into that run (a --jobs shard).
  std::string findings_db;
  int64_t findings_run = 0;

  bool in_shard(int k) const { return k % shard_count == shard_index; }
  // How many of the cases [0, next_case) are this shard's.
  int shard_cases_before(int next_case) const {
    return next_case <= shard_index ? 0 : (next_case - shard_index + shard_count - 1) / shard_count;
  }
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
// A --jobs shard's lowest case about to be shrunk, for the parent's stop file (CampaignPlan::stop_file).
inline constexpr const char* kFailingCaseFile = ".failing";

std::string campaign_state_path(const std::string& dir);
// Atomic: readers see the old state or the new one.
void save_campaign_state(const std::string& dir, const CampaignState& state);
// Throws std::runtime_error naming the file when it is missing or unreadable, and
// std::invalid_argument naming the field when a field is malformed.
CampaignState load_campaign_state(const std::string& dir);
// Removes temporary files an interrupted atomic write left in `dir` (NAME.tmp.PID).
int remove_stale_temporaries(const std::string& dir);

}  // namespace shardfuzz::fuzz
