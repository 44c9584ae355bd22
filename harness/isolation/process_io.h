// Plumbing shared by the one-shot child and the persistent worker (internal to harness/isolation):
// pipes, non-blocking drains, waiting for the child against its limits.
#pragma once

#include "harness/isolation/child_outcome.h"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace shardfuzz::harness::isolation::io {

inline constexpr std::size_t kStderrTail = 2000;

// Blocking write of all of `s` (false: the reader is gone).
bool write_all(int fd, const void* data, std::size_t size);
// Blocking read of exactly `size` bytes (false: end of file first).
bool read_exact(int fd, void* data, std::size_t size);
// Reads what is there without blocking into `into` (keeping its last `keep_tail` bytes when
// nonzero); false at end of file.
bool drain(int fd, std::string& into, std::size_t keep_tail);
void set_nonblocking(int fd);
void kill_group(pid_t pid);  // SIGKILL to the child and its process group

enum class Wait { Ready, Closed, TimedOut, OutOfMemory };
// Polls `fd` for input until it is readable (Ready) or closed (Closed), draining `stderr_fd` into
// `tail` meanwhile, and sampling the child's RSS into `peak_rss`; kills the child at a limit.
Wait wait_readable(int fd, int stderr_fd, std::string& tail, pid_t child, const Limits& limits,
                   std::chrono::steady_clock::time_point deadline, int64_t& peak_rss);

// The outcome for a child that ended with `status` (waitpid) without returning: Signalled or Exited.
void set_from_status(ChildOutcome& o, int status);

}  // namespace shardfuzz::harness::isolation::io
