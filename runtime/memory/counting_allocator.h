// The allocator probe: replaces LibTorch's CPU (and meta) allocator once per process and counts current and peak
// bytes per rank, attributing each allocation to the rank whose thread made it (and each free to
// the rank that allocated, whichever thread frees it).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace shardfuzz::memory {

inline constexpr int kMaxTrackedRanks = 1024;

struct RankBytes {
  int64_t current = 0;
  int64_t peak = 0;
};

// Installs the counting allocator as LibTorch's CPU allocator (idempotent, thread-safe).
void install_counting_allocator();
bool counting_allocator_installed();
// Installs the same counting as LibTorch's meta allocator (shape-only runs: tensors with shapes and
// no data); a meta tensor's bytes count on the rank that made it, as a CPU tensor's do.
void install_counting_meta_allocator();

// rank -1 is "allocated outside any rank thread".
RankBytes allocated_bytes(int rank);
void reset_peak(int rank);  // peak := current

// Fault injection: the rank's allocation number `at_allocation` (0-based, counted from arming) fails,
// or the first one that takes the rank more than `limit_bytes` above its bytes at arming does. It
// fails as a real OOM: c10::OutOfMemoryError thrown from the allocator, naming the rank, the
// allocation and its size. Each fault fires once (the first of a rank's faults that matches an
// allocation); `on_fire` (may be empty) is called first, on the allocating thread, with the
// allocation's index and size. Arming replaces the rank's earlier faults.
struct AllocationFault {
  int64_t at_allocation = -1;  // -1: by limit
  int64_t limit_bytes = 0;     // 0: by allocation
  std::function<void(int64_t index, int64_t bytes)> on_fire;
};
void arm_allocation_faults(int rank, std::vector<AllocationFault> faults);
void disarm_allocation_fault(int rank);

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
