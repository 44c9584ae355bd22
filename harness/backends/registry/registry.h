// The backends by name: the one place that knows every backend (threads/, process/, torch/) and
// the options each takes from the command line.
#pragma once

#include "harness/backends/backend.h"
#include "harness/backends/run_options.h"

#include <chrono>
#include <memory>
#include <string>

namespace shardfuzz::harness {

struct BackendOptions {
  std::string name = "threads";  // "threads", "process", "nccl" or "torch"
  RunOptions threads;            // the native runtime's options (threads, process and nccl)
  // process and nccl: ranks per world (0: each scenario's own world size) and the binary that
  // serves them (empty: this executable; tests name the shardfuzz binary).
  int nproc = 0;
  std::string rank_worker;
  bool join = false;  // process and nccl: this process is rank 0 of an external launch (process_backend.h)
  // torch: the python that imports torch, whether ranks run on CPU (gloo) even with a GPU, the
  // per-scenario deadline, and a folder to keep each run's conformance trace in (empty: none).
  std::string python = "python3";
  bool cpu = false;
  std::chrono::seconds torch_deadline{120};
  std::string keep_traces_dir;
};

// Throws std::invalid_argument naming --backend for an unknown name.
std::unique_ptr<Backend> make_backend(const BackendOptions& options);

}  // namespace shardfuzz::harness
