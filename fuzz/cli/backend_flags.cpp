// --backend threads|torch.
#include "fuzz/cli/backend_flags.h"

#include <stdexcept>

namespace shardfuzz::cli {

void add_backend_flags(CLI::App* cmd, BackendFlags& f) {
  cmd->add_option("--backend", f.backend,
                  "threads: the native runtime, ranks as threads (default); torch: PyTorch's own fully_shard "
                  "through a persistent worker (one process per rank; NCCL on GPUs, gloo on CPU)")
      ->check(CLI::IsMember({"threads", "torch"}))
      ->capture_default_str();
  cmd->add_option("--torch-python", f.torch_python, "with --backend torch: the python that imports torch")
      ->capture_default_str();
  cmd->add_flag("--cpu", f.cpu, "with --backend torch: ranks on CPU (gloo) even with GPUs");
  cmd->add_option("--torch-deadline", f.deadline_s, "with --backend torch: seconds a scenario may run (a hang past it is a finding)")
      ->capture_default_str();
  cmd->add_flag("--no-recovery", f.no_recovery,
                "threads: a planned oom or exception stops the run like any other fault, instead of every rank "
                "resetting and running the step again");
}

std::unique_ptr<harness::Backend> make_backend(const BackendFlags& f) {
  if (f.deadline_s < 1 || f.deadline_s > 3600)
    throw std::invalid_argument("--torch-deadline: " + std::to_string(f.deadline_s) + " outside 1-3600 seconds");
  harness::BackendOptions o;
  o.name = f.backend;
  o.python = f.torch_python;
  o.cpu = f.cpu;
  o.torch_deadline = std::chrono::seconds(f.deadline_s);
  o.threads.recover = !f.no_recovery;
  return harness::make_backend(o);
}

}  // namespace shardfuzz::cli
