// A process's resident set in bytes, from /proc/PID/statm: what the isolation watchdog samples in its
// child (harness/isolation), and what a soak checks stays flat in this process.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace shardfuzz::harness {

// `pid` 0: this process. 0 when it cannot be read (no such process, no /proc).
int64_t resident_set_bytes(pid_t pid = 0);

}  // namespace shardfuzz::harness
