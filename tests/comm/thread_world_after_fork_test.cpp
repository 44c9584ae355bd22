// ThreadWorld in a forked child (a --jobs shard, an isolated case): torch rebuilds its intra-op
// thread pool at the first thread-count call after a fork, and that rebuild is not safe to race.
// Every rank thread makes that call on its first op, so the world settles it on the calling
// thread before any rank starts (a --jobs test failed 1 run in 24 with "rank 1: pool INTERNAL
// ASSERT FAILED ... Invalid thread pool!" before it did).
#include "runtime/comm/thread_world.h"
#include "runtime/comm/blas_threads.h"
#include "harness/isolation/child_outcome.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace shardfuzz::comm {
namespace {

using namespace std::chrono_literals;

// Runs a world of `n` ranks meeting at a barrier then asking torch for its thread count at once;
// the number of ranks that failed.
int ranks_failing_after_a_barrier(int n) {
  ThreadWorld world({n, 10000ms});
  int failed = 0;
  for (const auto& o : world.run([](std::shared_ptr<Communicator> c) {
         c->barrier();
         if (at::get_num_threads() != 1) throw std::runtime_error("torch runs more than one intra-op thread");
       }))
    failed += o.ok ? 0 : 1;
  return failed;
}

TEST(ThreadWorldAfterFork, RanksOfAForkedChildDoNotRaceTorchsThreadPoolRebuild) {
  if (harness::isolation::thread_count() > 1) GTEST_SKIP() << "the process has other threads (run through ctest)";
  ASSERT_EQ(ranks_failing_after_a_barrier(2), 0);  // the parent has used torch's pool: its children inherit it
  for (int child = 0; child < 12; ++child) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) std::_Exit(ranks_failing_after_a_barrier(32) == 0 ? 0 : 1);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "child " << child << " died";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child " << child << ": a rank thread failed on its first torch op";
  }
}

// The count is settled once per process, not once: a child whose parent settled it and then ran
// with more threads (a launcher that used LibTorch's pool between cases) settles it again, and a
// thread started after it runs one intra-op thread.
TEST(ThreadWorldAfterFork, EachProcessSettlesOneIntraOpThreadAgain) {
  if (harness::isolation::thread_count() > 1) GTEST_SKIP() << "the process has other threads (run through ctest)";
  const pid_t parent = ::fork();  // this test's own process keeps its thread count
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    one_intra_op_thread_per_process();
    at::set_num_threads(2);
    const pid_t pid = ::fork();
    if (pid < 0) std::_Exit(3);
    if (pid == 0) {
      one_intra_op_thread_per_process();
      int seen = 0;
      std::thread([&] {
        at::init_num_threads();
        seen = at::get_num_threads();
      }).join();
      std::_Exit(seen == 1 ? 0 : 1);
    }
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) std::_Exit(4);
    std::_Exit(WEXITSTATUS(status));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(parent, &status, 0), parent);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a new thread of the child ran more than one intra-op thread; 3/4: fork or "
                                       "wait failed";
}

}  // namespace
}  // namespace shardfuzz::comm
