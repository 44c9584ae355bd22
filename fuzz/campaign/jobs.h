// `fuzz --jobs N`: one campaign on N cores, as N local shards of it (the same split `--shard I/N`
// gives a fleet): shard I runs the cases k with k % N == I in a process of its own, writing into
// OUT/jobs/I (its log, state and reproducers), and OUT is their merge (fuzz/campaign/merge.h). So
// the cases run, and what a --cases campaign finds, do not depend on N; each shard shrinks its own
// findings while the others go on; a shard that dies loses its case, not the campaign. Without
// --keep-going the first finding stops the others once they pass its case index: a shard about to
// shrink claims its case (OUT/jobs/I/.failing) and wakes the parent over its pipe, the parent
// writes the lowest claim to OUT/.stop, and every shard stops before any case past it (a sink the
// parent injects into each shard's loop, which knows nothing of this). The parent prints one
// progress line for all (cases/s, findings, shards running, finished and died). Shards are started
// and reaped through harness/subprocess.
#pragma once

#include "fuzz/campaign/finding.h"
#include "fuzz/campaign/options.h"

#include <ostream>
#include <string>

namespace shardfuzz::fuzz {

// A --jobs shard's lowest case about to be shrunk, in its folder, for the parent's stop file.
inline constexpr const char* kFailingCaseFile = ".failing";

// Where shard I of a --jobs campaign writes.
std::string job_dir(const std::string& out_dir, int shard);

// Runs options.jobs shards (a resume continues each unfinished one) and merges them into
// options.out_dir. The result's findings are the merge's, in case order.
CampaignResult run_parallel_campaign(const CampaignOptions& options, std::ostream& out);

// The cores this process may run on (its affinity mask): --jobs' default.
int available_cores();

}  // namespace shardfuzz::fuzz
