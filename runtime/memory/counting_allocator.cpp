// Counting CPU allocator: one atomic counter pair per rank, no locks on the hot path.
#include "runtime/memory/counting_allocator.h"

#include "runtime/compat/torch_compat.h"

#include <c10/core/CPUAllocator.h>

#include <array>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>

namespace shardfuzz::memory {
namespace {

struct Counter {
  std::atomic<int64_t> current{0};
  std::atomic<int64_t> peak{0};
};

// Slot 0 is rank -1 (untagged); slot r+1 is rank r.
std::array<Counter, kMaxTrackedRanks + 1> g_counters;
thread_local int t_rank = -1;

Counter& counter_for(int rank) {
  if (rank < -1 || rank >= kMaxTrackedRanks)
    throw std::out_of_range("memory probe: rank " + std::to_string(rank) + " outside [-1, " +
                            std::to_string(kMaxTrackedRanks) + ")");
  return g_counters[static_cast<std::size_t>(rank + 1)];
}

void add(Counter& c, int64_t n) {
  int64_t now = c.current.fetch_add(n, std::memory_order_relaxed) + n;
  int64_t peak = c.peak.load(std::memory_order_relaxed);
  while (now > peak && !c.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

// Owns the wrapped allocation; freed through the deleter below on any thread.
struct Allocation {
  at::DataPtr inner;
  int64_t bytes;
  Counter* counter;
};

void free_allocation(void* ctx) {
  auto* a = static_cast<Allocation*>(ctx);
  a->counter->current.fetch_sub(a->bytes, std::memory_order_relaxed);
  delete a;  // releases `inner` through the wrapped allocator
}

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* inner) : inner_(inner) {}

  at::DataPtr allocate(std::size_t n) SHARDFUZZ_ALLOCATE_CONST override {
    at::DataPtr inner = inner_->allocate(n);
    void* data = inner.get();
    c10::Device device = inner.device();
    Counter& c = g_counters[static_cast<std::size_t>(
        (t_rank >= -1 && t_rank < kMaxTrackedRanks ? t_rank : -1) + 1)];
    add(c, static_cast<int64_t>(n));
    auto* a = new Allocation{std::move(inner), static_cast<int64_t>(n), &c};
    return {data, a, &free_allocation, device};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  SHARDFUZZ_ALLOCATOR_COPY_DATA

 private:
  c10::Allocator* inner_;
};

std::once_flag g_install_once;
std::atomic<bool> g_installed{false};

}  // namespace

void install_counting_allocator() {
  std::call_once(g_install_once, [] {
    static CountingAllocator allocator(c10::GetCPUAllocator());
    c10::SetCPUAllocator(&allocator, /*priority=*/100);
    g_installed = true;
  });
}

bool counting_allocator_installed() { return g_installed.load(); }

RankBytes allocated_bytes(int rank) {
  Counter& c = counter_for(rank);
  return {c.current.load(std::memory_order_relaxed), c.peak.load(std::memory_order_relaxed)};
}

void reset_peak(int rank) {
  Counter& c = counter_for(rank);
  c.peak.store(c.current.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

int current_allocation_rank() { return t_rank; }

AllocationRankGuard::AllocationRankGuard(int rank) : previous_(t_rank) {
  counter_for(rank);  // validates
  t_rank = rank;
}
AllocationRankGuard::~AllocationRankGuard() { t_rank = previous_; }

}  // namespace shardfuzz::memory
