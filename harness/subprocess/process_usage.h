// A process's CPU time and minor page faults so far, from /proc/PID/stat: every thread of it
// counted, alive or ended. What a benchmark reads from a worker that is still running (getrusage's
// RUSAGE_CHILDREN counts a child only once it has been reaped), so a row can time a warm worker's
// cases without its start-up.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>

namespace shardfuzz::harness {

struct ProcessUsage {
  double cpu_seconds = 0;    // user + system
  int64_t minor_faults = 0;  // page faults served without I/O: fresh or copy-on-write pages
};

// `pid` 0: this process. nullopt when it cannot be read (no such process, no /proc).
std::optional<ProcessUsage> process_usage(pid_t pid = 0);

}  // namespace shardfuzz::harness
