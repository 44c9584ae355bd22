// Isolation: a child that returns, throws, segfaults, aborts, exits, hangs or runs away with
// memory is an outcome for the parent, never the parent's end; a persistent worker serves many
// calls with one start and is replaced after it dies. Needs a single-threaded test process (ctest
// runs each test in its own; the whole binary at once skips these).
#include "harness/isolation/child_process.h"
#include "harness/isolation/worker_process.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace shardfuzz::harness::isolation {
namespace {

using namespace std::chrono_literals;
using Kind = ChildOutcome::Kind;

Limits quick() {
  Limits l;
  l.wall = 2000ms;
  l.memory_bytes = int64_t{512} << 20;
  return l;
}

#define REQUIRE_SINGLE_THREADED() \
  if (thread_count() > 1) GTEST_SKIP() << "the process has other threads (run through ctest)"

TEST(Isolation, AReturningChildHandsBackItsString) {
  REQUIRE_SINGLE_THREADED();
  const ChildOutcome o = run_in_child([] { return std::string("verdicts"); }, quick());
  EXPECT_EQ(o.kind, Kind::Returned);
  EXPECT_EQ(o.output, "verdicts");
}

TEST(Isolation, AThrowingChildHandsBackTheMessage) {
  REQUIRE_SINGLE_THREADED();
  const ChildOutcome o = run_in_child([]() -> std::string { throw std::runtime_error("bad scenario"); }, quick());
  EXPECT_EQ(o.kind, Kind::Threw);
  EXPECT_EQ(o.output, "bad scenario");
  EXPECT_FALSE(o.died());
}

TEST(Isolation, ASegfaultIsNamedWithTheChildsLastWords) {
  REQUIRE_SINGLE_THREADED();
  const ChildOutcome o = run_in_child(
      []() -> std::string {
        std::fprintf(stderr, "about to crash\n");
        std::raise(SIGSEGV);
        return "";
      },
      quick());
  EXPECT_EQ(o.kind, Kind::Signalled);
  EXPECT_EQ(o.signal, SIGSEGV);
  const std::string d = o.describe(quick());
  EXPECT_EQ(d.rfind("died of SIGSEGV after ", 0), 0u) << d;
  EXPECT_NE(d.find("its stderr ended: about to crash"), std::string::npos) << d;
}

TEST(Isolation, AnAbortAndAnExitAreNamed) {
  REQUIRE_SINGLE_THREADED();
  EXPECT_EQ(run_in_child([]() -> std::string { std::abort(); }, quick()).signal, SIGABRT);
  // std::exit runs the whole binary's static teardown (LibTorch's included): 0.7 s on an idle
  // 2-core machine, past 2 s under a loaded ctest -j2. The limit is not what this test is about.
  Limits exiting = quick();
  exiting.wall = 20s;
  const ChildOutcome o = run_in_child([]() -> std::string { std::exit(3); }, exiting);
  EXPECT_EQ(o.kind, Kind::Exited);
  EXPECT_EQ(o.exit_code, 3);
}

TEST(Isolation, AHangIsKilledAtTheWallClockLimit) {
  REQUIRE_SINGLE_THREADED();
  Limits l = quick();
  l.wall = 300ms;
  const ChildOutcome o = run_in_child(
      []() -> std::string {
        for (;;) std::this_thread::sleep_for(1s);
      },
      l);
  EXPECT_EQ(o.kind, Kind::TimedOut);
  EXPECT_LT(o.seconds, 2.0);
  EXPECT_EQ(o.describe(l), "ran past its wall-clock limit of 0.3 s and was killed");
}

TEST(Isolation, ARunawayAllocationIsKilledAtTheMemoryLimit) {
  REQUIRE_SINGLE_THREADED();
  Limits l = quick();
  l.memory_bytes = int64_t{64} << 20;
  const ChildOutcome o = run_in_child(
      []() -> std::string {
        std::vector<char*> blocks;
        for (int i = 0; i < 64; ++i) {  // 1 GiB in all, touched, slowly enough to be sampled
          char* b = static_cast<char*>(std::malloc(16 << 20));
          std::memset(b, 1, 16 << 20);
          blocks.push_back(b);
          std::this_thread::sleep_for(10ms);
        }
        return "survived";
      },
      l);
  EXPECT_EQ(o.kind, Kind::OutOfMemory);
  EXPECT_GT(o.peak_rss_bytes, l.memory_bytes);
  EXPECT_NE(o.describe(l).find("passed its memory limit of 64 MiB"), std::string::npos) << o.describe(l);
}

TEST(Isolation, AWorkerServesManyCallsWithOneStartAndIsReplacedAfterItDies) {
  REQUIRE_SINGLE_THREADED();
  WorkerProcess worker([](const std::string& request) -> std::string {
    if (request == "crash") std::raise(SIGSEGV);
    return "echo " + request;
  });
  for (int i = 0; i < 5; ++i) EXPECT_EQ(worker.call(std::to_string(i), quick()).output, "echo " + std::to_string(i));
  EXPECT_EQ(worker.starts(), 1);
  EXPECT_EQ(worker.call("crash", quick()).signal, SIGSEGV);
  EXPECT_FALSE(worker.alive());
  EXPECT_EQ(worker.call("after", quick()).output, "echo after");
  EXPECT_EQ(worker.starts(), 2);
}

TEST(Isolation, ForkingFromAMultiThreadedProcessIsRefused) {
  REQUIRE_SINGLE_THREADED();
  bool stop = false;
  std::thread other([&] {
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) std::this_thread::sleep_for(1ms);
  });
  EXPECT_THROW(run_in_child([] { return std::string(); }, quick()), std::logic_error);
  __atomic_store_n(&stop, true, __ATOMIC_RELEASE);
  other.join();
}

}  // namespace
}  // namespace shardfuzz::harness::isolation
