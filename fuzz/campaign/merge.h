// Uniting the output folders of one campaign's shards (`--shard I/N` on a fleet, or the local
// shards of `--jobs N`) into one: every shard's reproducers (with their HTML reports and device
// snapshots) copied into the target folder, one .campaign.json whose findings are all the shards'
// in case order, and their findings databases merged into the target's. A campaign split N ways
// then merged finds what the unsplit campaign finds: case k is drawn from (seed, k) alone.
#pragma once

#include "fuzz/campaign/state.h"

#include <string>
#include <utility>
#include <vector>

namespace shardfuzz::fuzz {

struct MergedCampaign {
  CampaignState state;  // the whole campaign's plan (shard 0 of 1), findings in case order
  int cases_run = 0;    // over every shard
  int shard_count = 1;
  std::vector<int> shards_missing;    // indexes of the N no folder was given for
  std::vector<int> shards_unfinished;  // killed or still running: `fuzz --resume` continues them
  std::vector<std::string> messages;   // each finding's message (from its reproducer), by findings index
};

// Reads each folder's .campaign.json: they must be shards of one plan (same seed, generator and
// case limit, the same N, distinct indexes), else std::invalid_argument naming the folder and the
// field. Writes the merged state into `out_dir` (created when missing; it may be one of `dirs`).
// `as_shard`: the share of a larger campaign the union is (a fleet member's --jobs), else 0 of 1.
MergedCampaign merge_campaigns(const std::vector<std::string>& dirs, const std::string& out_dir,
                               std::pair<int, int> as_shard = {0, 1});

}  // namespace shardfuzz::fuzz
