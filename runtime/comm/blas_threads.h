// The BLAS every rank thread calls into. ThreadWorld runs N ranks as threads of one process, all
// calling LibTorch's matmuls concurrently, so the BLAS behind them must be thread-safe and
// single-threaded per call (the ranks are the parallelism). Measured on Debian 12 (2 CPUs): the
// reference BLAS is both; OpenBLAS's pthread build is both once told one thread per call; OpenBLAS's
// serial build (libopenblas0-serial) is not thread-safe — concurrent ranks corrupt each other's
// products (5 of 15 runs of the standard small scenario failed parity, with losses off by 30%).
#pragma once

#include <string>

namespace shardfuzz::comm {

// The loaded BLAS library that concurrent rank threads would corrupt, named by its path in
// `maps` (the text of /proc/self/maps); "" when there is none.
std::string thread_unsafe_blas(const std::string& maps);
// The same for this process.
std::string thread_unsafe_blas_loaded();

// Asks a threaded OpenBLAS for one thread per call, when one is loaded (openblas_set_num_threads).
void single_threaded_blas();

// Ranks are the parallelism (rank threads, rank processes, --jobs shards): one intra-op thread for
// LibTorch (at::set_num_threads(1), whose OpenMP and MKL teams every new thread then takes with
// at::init_num_threads()) and one per BLAS call, as torchrun sets OMP_NUM_THREADS=1 for its workers.
// Once per process, again in a forked child, on a thread before any rank or reference thread
// starts: a forked LibTorch rebuilds its pool at the first thread-count call, and two threads
// racing it failed a rank with "Invalid thread pool!".
void one_intra_op_thread_per_process();

// Whether a threaded OpenBLAS started a pool of more than one thread when it loaded (it sizes the
// pool from OPENBLAS_NUM_THREADS, else the CPU count, before main runs). Fork-based isolation needs
// a single-threaded process, and the ranks are the parallelism anyway: the shardfuzz binary then
// stops the pool (stop_blas_thread_pool), or else starts itself again with OPENBLAS_NUM_THREADS=1
// (app/main.cpp).
bool blas_thread_pool_started();

// Asks a threaded OpenBLAS for one thread per call and joins its pool's threads
// (blas_thread_shutdown_, what OpenBLAS's own fork handler calls; with one thread per call it never
// starts them again). False when this OpenBLAS has no such entry point.
bool stop_blas_thread_pool();

}  // namespace shardfuzz::comm
