// The process backend: one process per rank, like a real job. The launcher (this process) serves
// a TCPStore, starts `shardfuzz rank-worker` once per rank with torchrun's environment, hands them
// each scenario with its hash and assembles the RunRecord from the records they send back. A pool
// of rank processes lives across scenarios of its world size; up to four pools stay warm.
//
// comm "store": collectives through the store, host-staged (runtime/comm/store_world.h): any
// device, several ranks on one GPU, and what CI tests this machinery with on CPU.
// comm "nccl": NCCL, one GPU per rank (runtime/comm/nccl_world.h).
//
// --join: torchrun, srun or a script started every rank with the same command (so one binary runs
// on one node or several); rank 0 runs the command and is a rank too, the others serve theirs
// (rank_process.h). Nothing is spawned; a rank that stops answering is reported once (it is not
// this process's child, so "gone or stuck"), and the launch cannot continue without it.
//
// A rank process that dies is reported ("rank R: process died: signal 9 (Killed)", error kind
// "process_died"), not waited for: the pool is killed and the next scenario starts a fresh one.
#pragma once

#include "harness/backends/backend.h"
#include "harness/backends/run_options.h"

#include <chrono>
#include <memory>
#include <string>

namespace shardfuzz::harness::process {

struct ProcessOptions {
  std::string comm = "store";  // "store" or "nccl"
  int nproc = 0;               // 0: each scenario's world size; N: scenarios must have world size N
  std::string worker;          // the shardfuzz binary to start ranks from (empty: this executable)
  // Join an external launch (torchrun, srun) instead of starting ranks: this process is its rank
  // 0 (RANK=0; the others run serve_joined_rank), nproc is its WORLD_SIZE.
  bool join = false;
  RunOptions run;              // run.device: "cpu" or "cuda" (each rank on GPU LOCAL_RANK mod the GPU count)
  // A case whose ranks have not all answered by then is reported as a hang and its pool killed.
  std::chrono::seconds case_limit{300};
};

// Throws std::invalid_argument naming the option (--nproc, --device, --backend) it cannot honour.
std::unique_ptr<Backend> make_process_backend(const ProcessOptions& options);

}  // namespace shardfuzz::harness::process
