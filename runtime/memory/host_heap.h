// The process's host heap, tuned for runs that allocate and free the same buffers case after case.
// glibc hands freed memory back to the kernel: blocks over the mmap threshold (128 KiB at first)
// are their own mappings, and a heap whose free top passes the trim threshold is cut with
// MADV_DONTNEED, so the next case's fresh buffers page-fault again (12% of a world-4 case on 2
// cores went to page faults; perf, 2026-12-05). keep_freed_host_memory() keeps them: the largest
// mmap threshold glibc allows (32 MiB), a 1 GiB trim threshold and a 16 MiB top pad. The resident
// set then stays near the largest case's high-water mark instead of following each case down.
// A variable the user set (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_) wins.
#pragma once

namespace shardfuzz::memory {

// Applies the settings once per process; later calls do nothing.
void keep_freed_host_memory();

}  // namespace shardfuzz::memory
