// A rank process of the process backend (`shardfuzz rank-worker`, started by the launcher or by
// torchrun/srun with their environment): it connects to the launcher's TCPStore, then serves
// cases until told to stop — each case's scenario is checked against the launcher's hash, run as
// this rank (harness/rank_run.h) over the pool's communicator (StoreWorld, or NCCL on GPUs), and
// its RankRecord written back.
#pragma once

#include "harness/process/pool_protocol.h"

namespace shardfuzz::harness::process {

// Returns the process's exit code (0 when stopped; a case's failure is reported, not fatal).
// Throws std::invalid_argument for an unusable environment (naming the variable).
int serve_rank(const RankEnv& env);

}  // namespace shardfuzz::harness::process
