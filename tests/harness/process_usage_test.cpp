// process_usage: a process's CPU time and minor page faults from /proc/PID/stat, read for this
// process and for a worker that is still running; nothing for a process that does not exist.
#include "harness/isolation/worker_process.h"
#include "harness/subprocess/process_usage.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace shardfuzz::harness {
namespace {

// Spins until this thread has used `seconds` of CPU time (not wall time: on a loaded machine a
// wall-time spin gets only part of a core, and the bounds below would fail); returns something the
// optimiser must keep.
uint64_t burn(double seconds) {
  const auto thread_cpu = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  };
  const double until = thread_cpu() + seconds;
  uint64_t x = 1;
  while (thread_cpu() < until)
    for (int i = 0; i < 10000; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

TEST(ProcessUsage, CountsThisProcesssCpuAndTheFaultsOfFreshPages) {
  const auto before = process_usage();
  ASSERT_TRUE(before.has_value());
  EXPECT_NE(burn(0.15), 0u);
  // Fresh anonymous pages, each faulted in by its first write (no huge pages: one fault per page).
  constexpr int kPages = 512;
  const long page = ::sysconf(_SC_PAGESIZE);
  void* fresh = ::mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(fresh, MAP_FAILED);
  ::madvise(fresh, kPages * page, MADV_NOHUGEPAGE);
  for (int i = 0; i < kPages; ++i) static_cast<volatile char*>(fresh)[i * page] = 1;
  const auto after = process_usage();
  ::munmap(fresh, kPages * page);
  ASSERT_TRUE(after.has_value());
  // CPU time is counted in clock ticks (10 ms): 150 ms spun shows as at least 100 ms.
  EXPECT_GE(after->cpu_seconds - before->cpu_seconds, 0.1);
  EXPECT_GE(after->minor_faults - before->minor_faults, kPages);
}

TEST(ProcessUsage, ReadsARunningWorkersOwnCpuCaseAfterCase) {
  if (isolation::thread_count() > 1) GTEST_SKIP() << "the process has other threads (run through ctest)";
  isolation::WorkerProcess worker([](const std::string&) { return std::to_string(burn(0.3)); });
  isolation::Limits limits;
  limits.wall = std::chrono::seconds(10);
  ASSERT_TRUE(worker.call("", limits).returned());
  const pid_t pid = worker.pid();
  ASSERT_GT(pid, 0);
  const auto usage = process_usage(pid);
  ASSERT_TRUE(usage.has_value());
  EXPECT_GE(usage->cpu_seconds, 0.2);  // the worker's spin, not this process's
  EXPECT_GT(usage->minor_faults, 0);
  ASSERT_TRUE(worker.call("", limits).returned());
  EXPECT_GE(process_usage(pid)->cpu_seconds, usage->cpu_seconds + 0.2);  // one worker, counted on
}

TEST(ProcessUsage, IsNothingForAProcessThatDoesNotExist) {
  EXPECT_FALSE(process_usage(0x3fffffff).has_value());  // above any pid_max Linux allows
}

}  // namespace
}  // namespace shardfuzz::harness
