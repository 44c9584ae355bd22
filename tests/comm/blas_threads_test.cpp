// The BLAS guard: OpenBLAS's serial build is recognised in a process map (it corrupts concurrent
// rank threads' matmuls), the reference BLAS and OpenBLAS's pthread build are not; this process's
// own BLAS passes (CI installs neither OpenBLAS build).
#include "runtime/comm/blas_threads.h"

#include <gtest/gtest.h>

namespace shardfuzz::comm {
namespace {

TEST(BlasThreads, OnlyTheSerialOpenBlasIsRefused) {
  const std::string serial =
      "7f00-7f10 r-xp 00000000 08:01 1234 /usr/lib/x86_64-linux-gnu/openblas-serial/libblas.so.3\n";
  const std::string pthread =
      "7f00-7f10 r-xp 00000000 08:01 1234 /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3\n";
  const std::string reference = "7f00-7f10 r-xp 00000000 08:01 1234 /usr/lib/x86_64-linux-gnu/blas/libblas.so.3\n";
  EXPECT_EQ(thread_unsafe_blas(serial), "/usr/lib/x86_64-linux-gnu/openblas-serial/libblas.so.3");
  EXPECT_EQ(thread_unsafe_blas(pthread), "");
  EXPECT_EQ(thread_unsafe_blas(reference), "");
  EXPECT_EQ(thread_unsafe_blas("7f00-7f10 rw-p 00000000 00:00 0 [heap]\n" + reference + serial),
            "/usr/lib/x86_64-linux-gnu/openblas-serial/libblas.so.3");
  EXPECT_EQ(thread_unsafe_blas_loaded(), "") << "this build's tests run on a thread-safe BLAS";
}

}  // namespace
}  // namespace shardfuzz::comm
