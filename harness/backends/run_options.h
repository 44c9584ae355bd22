// RunOptions: how the native runtime runs a scenario, whichever backend hosts its ranks (threads,
// process, nccl).
#pragma once

#include <chrono>
#include <string>

namespace shardfuzz::harness {

struct RunOptions {
  // Per collective. CPU ranks exchange tiny tensors in microseconds, so a rank waiting this long is
  // stuck (a hang: ranks in different collectives); short enough that shrinking a hang stays fast.
  std::chrono::milliseconds deadline{3000};
  bool optimizer_step = true;                 // false: forward/backward only (the recorded traces)
  bool record_timeline = true;                // false: no timeline (benchmarks; properties need it)
  // Attach the scenario's unsharded reference to a completed run (harness/reference: trained once
  // per scenario and cached), for parity_with_reference to judge. false: parity is skipped.
  bool reference = true;
  // When the scenario plans a recoverable fault (oom, exception): every rank undoes the failed
  // step and runs it again (train/recovery.h). false: those faults stop the run.
  bool recover = true;
  // Where rank tensors live: "cpu", or "cuda" / "cuda:N" (world size 1 only for ranks as threads:
  // LibTorch runs every thread's CUDA backward on one engine thread per device, so ranks as threads
  // that meet in backward collectives would wait on each other forever; docs/gpu-path.md).
  std::string device = "cpu";
  // Threads backend: the OS runs the rank threads in parallel on the wall clock, and the
  // scenario's schedule is ignored (comm/schedule.h). A verdict may then depend on thread timing,
  // so a finding may not replay; false (the default) runs the scenario's schedule, deterministically.
  bool unscheduled = false;
};

}  // namespace shardfuzz::harness
