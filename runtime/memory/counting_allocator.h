// The allocator probe: replaces LibTorch's CPU allocator once per process and counts current and peak
// bytes per rank, attributing each allocation to the rank whose thread made it (and each free to
// the rank that allocated, whichever thread frees it).
#pragma once

#include <cstdint>

namespace shardfuzz::memory {

inline constexpr int kMaxTrackedRanks = 1024;

struct RankBytes {
  int64_t current = 0;
  int64_t peak = 0;
};

// Installs the counting allocator as LibTorch's CPU allocator (idempotent, thread-safe).
void install_counting_allocator();
bool counting_allocator_installed();

// rank -1 is "allocated outside any rank thread".
RankBytes allocated_bytes(int rank);
void reset_peak(int rank);  // peak := current

// Which rank the calling thread allocates for (-1 when none). Set by the rank's thread.
int current_allocation_rank();
class AllocationRankGuard {
 public:
  explicit AllocationRankGuard(int rank);
  ~AllocationRankGuard();
  AllocationRankGuard(const AllocationRankGuard&) = delete;
  AllocationRankGuard& operator=(const AllocationRankGuard&) = delete;

 private:
  int previous_;
};

}  // namespace shardfuzz::memory
