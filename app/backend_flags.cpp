// --backend threads|process|nccl|torch, --device, --nproc.
#include "app/backend_flags.h"

#include "harness/backends/process/rank_process.h"

#include <stdexcept>

namespace shardfuzz::app {

void add_backend_flags(CLI::App* cmd, BackendFlags& f) {
  cmd->add_option("--backend", f.backend,
                  "threads: the native runtime, ranks as threads (default); process: the native runtime, one "
                  "process per rank, collectives through their TCPStore; nccl: the same with NCCL, one GPU per rank; "
                  "torch: PyTorch's own fully_shard through a persistent worker (one process per rank; NCCL on "
                  "GPUs, gloo on CPU)")
      ->check(CLI::IsMember({"threads", "process", "nccl", "torch"}))
      ->capture_default_str();
  cmd->add_option("--device", f.device,
                  "threads, process: where rank tensors live: cpu, cuda or cuda:N (threads: world size 1 only on "
                  "a GPU; process: every rank on GPU LOCAL_RANK mod the GPU count); nccl is always cuda; threads: "
                  "meta runs shape-only (sizes and bytes, no values; a scenario's shape_only always does)")
      ->capture_default_str();
  cmd->add_option("--nproc", f.nproc,
                  "process, nccl: rank processes per world (0: each scenario's world size; fuzz generates "
                  "world N)")
      ->capture_default_str();
  cmd->add_flag("--join", f.join,
                "process, nccl: join an external launch instead of starting rank processes: torchrun (or srun, or "
                "a script) starts this same command once per rank with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and "
                "MASTER_PORT; rank 0 runs it (generates, checks, reports), every other rank serves its rank");
  cmd->add_option("--torch-python", f.torch_python, "with --backend torch: the python that imports torch")
      ->capture_default_str();
  cmd->add_flag("--cpu", f.cpu, "with --backend torch: ranks on CPU (gloo) even with GPUs");
  cmd->add_option("--torch-deadline", f.deadline_s, "with --backend torch: seconds a scenario may run (a hang past it is a finding)")
      ->capture_default_str();
  cmd->add_flag("--no-recovery", f.no_recovery,
                "threads: a planned oom or exception stops the run like any other fault, instead of every rank "
                "resetting and running the step again");
  cmd->add_flag("--unscheduled", f.unscheduled,
                "threads: the OS runs the rank threads in parallel on the wall clock instead of the scenario's "
                "deterministic schedule (one rank at a time, handed over at collective boundaries); a verdict may "
                "then depend on thread timing, and a finding is replayed to say how often it fails");
}

bool is_embedded_default(const BackendFlags& f) {
  return f.backend == "threads" && !f.no_recovery && !f.unscheduled && f.device == "cpu";
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
  o.threads.unscheduled = f.unscheduled;
  o.threads.device = f.device;
  o.nproc = f.nproc;
  o.join = f.join;
  if (f.nproc != 0 && f.backend != "process" && f.backend != "nccl")
    throw std::invalid_argument("--nproc: only with --backend process or nccl");
  return harness::make_backend(o);
}

std::optional<int> serve_unless_rank0_of_joined_launch(BackendFlags& f) {
  if (!f.join) return std::nullopt;
  if (f.backend != "process" && f.backend != "nccl")
    throw std::invalid_argument("--join: only with --backend process or nccl");
  const auto env = harness::process::joined_rank_env(f.backend == "nccl" ? "nccl" : "store");
  const int world = harness::process::joined_world(env, f.nproc);  // every rank refuses a mismatch alike
  if (env.rank != 0) return harness::process::serve_joined_rank(env);
  f.nproc = world;
  return std::nullopt;
}

}  // namespace shardfuzz::app
