// Backends: what runs a scenario. The threads backend runs it on the native runtime (ranks as
// threads, the embedded default); the torch backend on PyTorch's own fully_shard through a
// long-lived worker (harness/torch). Both return a RunRecord, so the same properties, shrinking and
// reproducers apply; RunRecord::observed says what a backend could not see.
#pragma once

#include "harness/run_record.h"
#include "harness/scenario.h"
#include "harness/threads_backend.h"

#include <chrono>
#include <memory>
#include <string>

namespace shardfuzz::harness {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Validates the scenario (std::invalid_argument naming the field; the torch backend also for
  // what its export cannot express); a failure of the run itself is reported in the RunRecord.
  virtual RunRecord run(const Scenario& scenario) = 0;
  // Whether this backend can run a scenario under `profile` as the profile means it (torch: only
  // torch-2.11, as installed, and torch-2.9, its post_forward with PR #164009 undone).
  virtual bool runs_profile(const std::string& profile) const { return true; }
};

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
std::unique_ptr<Backend> make_threads_backend(const RunOptions& options = {});

}  // namespace shardfuzz::harness
