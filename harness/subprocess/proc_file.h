// The path of one of a process's files under /proc: what resident_set_bytes and process_usage read.
#pragma once

#include <sys/types.h>

#include <string>

namespace shardfuzz::harness {

// `pid` 0: this process ("/proc/self/NAME"); else "/proc/PID/NAME".
inline std::string proc_file(pid_t pid, const std::string& name) {
  return (pid == 0 ? std::string("/proc/self/") : "/proc/" + std::to_string(pid) + "/") + name;
}

}  // namespace shardfuzz::harness
