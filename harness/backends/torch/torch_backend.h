// The torch backend: a scenario runs on PyTorch's own fully_shard. Each run is the scenario's
// export (harness/backends/torch/repro_script.h) executed by the persistent worker (worker.py), whose rank
// processes record FSDP2's state after every transition; the recording comes back as a RunRecord.
// Device: one GPU per rank when there are enough (NCCL), else CPU with gloo.
#pragma once

#include "harness/backends/backend.h"
#include "harness/files/temp_dir.h"
#include "harness/backends/torch/torch_worker.h"

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

namespace shardfuzz::harness::torch_backend {

// The python that imports torch, whether ranks run on CPU (gloo) even with a GPU, the per-scenario
// deadline, and a folder to keep each run's conformance trace in (empty: none).
struct TorchOptions {
  std::string python = "python3";
  bool cpu = false;
  std::chrono::seconds torch_deadline{120};
  std::string keep_traces_dir;
};

class TorchBackend : public Backend {
 public:
  explicit TorchBackend(const TorchOptions& options);
  ~TorchBackend() override;
  std::string name() const override { return "torch"; }
  bool runs_profile(const std::string& profile) const override {
    return profile == "torch-2.11" || profile == "torch-2.9";
  }
  // Throws std::invalid_argument for what the export cannot express (expert_parallel), and
  // std::runtime_error when the worker cannot start its ranks (torch not importable): those are
  // the harness's problems, not findings. An exception, hang or death inside a run is the
  // RunRecord's error (liveness).
  RunRecord run(const Scenario& scenario) override;
  // The installed torch's version, asked of the worker before any run (the worker starts if it
  // has not). Throws std::runtime_error when torch is not installed for the python.
  std::string installed_torch_version();
  // torch.__version__ and the device of the last run ("" before the first).
  const std::string& torch_version() const { return torch_version_; }
  const std::string& device() const { return device_; }

 private:
  TorchOptions options_;
  TempDir dir_;                 // scripts and recordings, removed on destruction
  std::filesystem::path work_;  // dir_'s path
  std::unique_ptr<TorchWorker> worker_;
  int runs_ = 0;
  bool answered_ = false;  // the worker has answered a request
  std::string torch_version_, device_;
};

}  // namespace shardfuzz::harness::torch_backend
