// What became of a child process the harness ran a piece of work in (harness/isolation): it
// returned, threw, died of a signal, exited, ran past its wall-clock limit or passed its memory
// limit; with the tail of what it wrote to stderr.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace shardfuzz::harness::isolation {

struct Limits {
  std::chrono::milliseconds wall{std::chrono::seconds(60)};
  int64_t memory_bytes = int64_t{4} << 30;  // resident set size; the child is killed above it
};

struct ChildOutcome {
  enum class Kind { Returned, Threw, Signalled, Exited, TimedOut, OutOfMemory };
  Kind kind = Kind::Returned;
  std::string output;          // Returned: what the work returned; Threw: the exception's message
  int signal = 0;              // Signalled
  int exit_code = 0;           // Exited (without returning: std::exit, _exit)
  int64_t peak_rss_bytes = 0;  // as the parent sampled it
  double seconds = 0;
  std::string stderr_tail;  // the last lines the child wrote to stderr while it worked
  bool returned() const { return kind == Kind::Returned; }
  // The child died, hung or was killed (it cannot serve again).
  bool died() const { return kind != Kind::Returned && kind != Kind::Threw; }
  // "died of SIGSEGV after 0.41 s; its stderr ended: ...", "ran past its wall-clock limit of 60 s
  // and was killed", ...
  std::string describe(const Limits& limits) const;
};

// The number of threads of this process (from /proc/self/task).
int thread_count();

// Throws std::logic_error when this process has other threads: LibTorch's thread pools do not
// survive fork, so the isolated campaign keeps its own process single-threaded.
void require_single_threaded(const char* what);

}  // namespace shardfuzz::harness::isolation
