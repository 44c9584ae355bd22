// A rank process of the process backend (`shardfuzz rank-worker`, started by the launcher or by
// torchrun/srun with their environment, `--join`): it connects to the launcher's TCPStore, then serves
// cases until told to stop — each case's scenario is checked against the launcher's hash, run as
// this rank (harness/backends/rank_run.h) over the pool's communicator (StoreWorld, or NCCL on GPUs), and
// its RankRecord written back.
#pragma once

#include "harness/backends/process/pool_protocol.h"

#include <functional>

namespace c10d {
class Store;
}

namespace shardfuzz::harness::process {

// Each returns the process's exit code (0 when stopped; a case's failure is reported, not fatal)
// and throws std::invalid_argument for an unusable environment (naming the variable).
// A rank process this launcher started: it stops with the launcher.
int serve_rank(const RankEnv& env);
// A rank of an external launch (--join) other than rank 0: it stops when rank 0 says so.
int serve_joined_rank(const RankEnv& env);
// The loop itself over a connected store (the joined rank 0 serves itself on a thread).
int serve_cases(const c10::intrusive_ptr<c10d::Store>& store, const RankEnv& env,
                const std::function<bool()>& launcher_gone);

}  // namespace shardfuzz::harness::process
