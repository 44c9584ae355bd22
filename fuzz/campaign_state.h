// The campaign's state on disk, `OUT/.campaign.json`, so `shardfuzz fuzz --resume OUT` continues a
// campaign whose harness was killed (SIGKILL included). A campaign has no coverage corpus: case k
// is drawn from (seed, k) alone, so its state is what was asked (seed, generator, limits, options),
// how far it got (the next case, the time spent), and what it found (each reproducer written). It
// is rewritten atomically (temporary file + rename) after every case, and a case's reproducer is
// written before the case counts as done: a kill loses at most the case in progress, which resume
// runs again (same seed, same reproducer name), and leaves no half-written file.
#pragma once

#include "fuzz/gen/gen_config.h"
#include "fuzz/shrink.h"

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

struct CampaignState {
  // What was asked.
  uint64_t seed = 1;
  GenConfig gen;
  std::optional<int> cases;
  std::optional<double> seconds;
  ShrinkBudget shrink_budget;
  bool keep_going = false;
  std::string until_row;
  std::string command;
  std::string backend = "threads";
  bool isolate = true;
  int case_timeout_ms = 60000;
  int64_t case_memory_bytes = int64_t{4} << 30;
  // How far it got.
  int next_case = 0;              // cases [0, next_case) are done, their findings written
  double elapsed_seconds = 0;     // wall clock spent over all sessions
  int sessions = 1;               // 1 + the number of resumes
  bool finished = false;          // it stopped by its own limits (not killed)
  std::vector<CampaignFindingEntry> findings;
};

inline constexpr const char* kCampaignStateFile = ".campaign.json";  // hidden: replay walks *.json

std::string campaign_state_path(const std::string& dir);
// Atomic: readers see the old state or the new one.
void save_campaign_state(const std::string& dir, const CampaignState& state);
// Throws std::runtime_error naming the file when it is missing or unreadable, and
// std::invalid_argument naming the field when a field is malformed.
CampaignState load_campaign_state(const std::string& dir);
// Removes temporary files an interrupted atomic write left in `dir` (NAME.tmp.PID).
int remove_stale_temporaries(const std::string& dir);

}  // namespace shardfuzz::fuzz
