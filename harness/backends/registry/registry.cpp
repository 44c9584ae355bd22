// The backends by name.
#include "harness/backends/registry/registry.h"

#include "harness/backends/process/process_backend.h"
#include "harness/backends/threads/threads_backend.h"
#include "harness/backends/torch/torch_backend.h"

#include <stdexcept>

namespace shardfuzz::harness {

std::unique_ptr<Backend> make_backend(const BackendOptions& options) {
  if (options.name == "threads") return make_threads_backend(options.threads);
  if (options.name == "torch")
    return std::make_unique<torch_backend::TorchBackend>(
        torch_backend::TorchOptions{options.python, options.cpu, options.torch_deadline, options.keep_traces_dir});
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
