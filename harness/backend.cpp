// The backends by name.
#include "harness/backend.h"

#include "harness/process/process_backend.h"
#include "harness/torch/torch_backend.h"

#include <stdexcept>

namespace shardfuzz::harness {
namespace {

class ThreadsBackend : public Backend {
 public:
  explicit ThreadsBackend(const RunOptions& options) : options_(options) {}
  std::string name() const override { return "threads"; }
  RunRecord run(const Scenario& scenario) override { return run_threads(scenario, options_); }

 private:
  RunOptions options_;
};

}  // namespace

std::unique_ptr<Backend> make_threads_backend(const RunOptions& options) { return std::make_unique<ThreadsBackend>(options); }

std::unique_ptr<Backend> make_backend(const BackendOptions& options) {
  if (options.name == "threads") return make_threads_backend(options.threads);
  if (options.name == "torch") return std::make_unique<torch_backend::TorchBackend>(options);
  if (options.name == "process" || options.name == "nccl") {
    process::ProcessOptions p;
    p.comm = options.name == "nccl" ? "nccl" : "store";
    p.nproc = options.nproc;
    p.worker = options.rank_worker;
    p.join = options.join;
    p.run = options.threads;
    return process::make_process_backend(p);
  }
  throw std::invalid_argument("--backend: '" + options.name + "' is not a backend (threads, process, nccl, torch)");
}

}  // namespace shardfuzz::harness
