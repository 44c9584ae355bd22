// `fuzz --jobs N`: one campaign on N cores, as N local shards of it (the same split `--shard I/N`
// gives a fleet): shard I runs the cases k with k % N == I in a process of its own, writing into
// OUT/jobs/I (its log, state and reproducers), and OUT is their merge (fuzz/campaign_merge.h). So
// the cases run, and what a --cases campaign finds, do not depend on N; each shard shrinks its own
// findings while the others go on; a shard that dies loses its case, not the campaign. Without
// --keep-going the first finding stops the others once they pass its case index (a stop file),
// so the finding reported is the lowest case that fails, as with one job. The parent prints one
// progress line for all (cases/s, findings, shards running, finished and died).
#pragma once

#include "fuzz/campaign.h"

#include <ostream>

namespace shardfuzz::fuzz {

// Where shard I of a --jobs campaign writes.
std::string job_dir(const std::string& out_dir, int shard);

// Runs options.jobs shards (a resume continues each unfinished one) and merges them into
// options.out_dir. The result's findings are the merge's, in case order.
CampaignResult run_parallel_campaign(const CampaignOptions& options, std::ostream& out);

// The cores this process may run on (its affinity mask): --jobs' default.
int available_cores();

// In a --jobs shard: wakes the parent now (it also looks every 100 ms), after the shard claimed a
// failing case or as it ends, so the other shards stop and the merge starts without waiting for
// the parent's next look. Elsewhere: nothing.
void wake_parallel_parent();

}  // namespace shardfuzz::fuzz
