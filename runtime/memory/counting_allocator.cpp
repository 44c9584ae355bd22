// Counting CPU allocator: one atomic counter pair per rank, no locks on the hot path.
#include "runtime/memory/counting_allocator.h"
#include "runtime/memory/host_heap.h"

#include "runtime/compat/torch_compat.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <stdexcept>
#include <algorithm>
#include <string>
#include <vector>

namespace shardfuzz::memory {
namespace {

struct Counter {
  std::atomic<int64_t> current{0};
  std::atomic<int64_t> peak{0};
  // Fault injection (armed: `faults` set and `base`, `allocations` reset; only the rank's own
  // threads allocate on its counter while it is armed, and disarm when the last one fired).
  std::atomic<bool> armed{false};
  std::atomic<int64_t> allocations{0};
  int64_t base = 0;
  std::vector<AllocationFault> faults;
  std::vector<bool> fired;
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

// Each allocation carries a header just before its data saying how many bytes it counted and on
// which rank's counter, so the data pointer is its own context: Allocator::raw_allocate (used by
// some CPU kernels, e.g. oneDNN's bfloat16 matmul scratch) requires exactly that.
struct alignas(64) Header {
  int64_t bytes;
  Counter* counter;
};
static_assert(sizeof(Header) == 64, "the header keeps the data 64-byte aligned");

void free_allocation(void* data) {
  if (!data) return;
  auto* h = static_cast<Header*>(data) - 1;
  h->counter->current.fetch_sub(h->bytes, std::memory_order_relaxed);
  std::free(h);
}

// Throws the planned OOM when this allocation is one.
void maybe_fail(Counter& c, int rank, std::size_t n) {
  const int64_t index = c.allocations.fetch_add(1, std::memory_order_relaxed);
  const int64_t above = c.current.load(std::memory_order_relaxed) + static_cast<int64_t>(n) - c.base;
  for (std::size_t i = 0; i < c.faults.size(); ++i) {
    const AllocationFault& f = c.faults[i];
    if (c.fired[i] || !(f.at_allocation >= 0 ? index == f.at_allocation : above > f.limit_bytes)) continue;
    c.fired[i] = true;
    if (std::find(c.fired.begin(), c.fired.end(), false) == c.fired.end()) c.armed = false;
    if (f.on_fire) f.on_fire(index, static_cast<int64_t>(n));
    const std::string what =
        "injected allocation failure on rank " + std::to_string(rank) + ": allocation #" + std::to_string(index) +
        " of " + std::to_string(n) + " bytes" +
        (f.at_allocation >= 0 ? std::string(" (planned)")
                              : " would take training memory to " + std::to_string(above) +
                                    " bytes, over the limit of " + std::to_string(f.limit_bytes));
    throw c10::OutOfMemoryError(c10::SourceLocation{__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, what);
  }
}

// The allocating thread's rank counter, after its planned failure if this allocation is one.
Counter& counter_of_this_allocation(std::size_t n) {
  const int rank = t_rank >= -1 && t_rank < kMaxTrackedRanks ? t_rank : -1;
  Counter& c = g_counters[static_cast<std::size_t>(rank + 1)];
  if (c.armed.load(std::memory_order_relaxed)) maybe_fail(c, rank, n);
  return c;
}

class CountingAllocator final : public c10::Allocator {
 public:
  at::DataPtr allocate(std::size_t n) SHARDFUZZ_ALLOCATE_CONST override {
    Counter& c = counter_of_this_allocation(n);
    void* base = nullptr;
    if (posix_memalign(&base, alignof(Header), sizeof(Header) + n) != 0 || !base) throw std::bad_alloc();
    add(c, static_cast<int64_t>(n));
    auto* h = new (base) Header{static_cast<int64_t>(n), &c};
    void* data = h + 1;
    return {data, data, &free_allocation, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_allocation; }
  SHARDFUZZ_ALLOCATOR_COPY_DATA
};

// The shape-only device: LibTorch's meta tensors hold no data, but every one still asks the meta
// allocator for its bytes. Counting them on the rank's counter gives a shape-only run the same
// probe a CPU run has, in the bytes the real run would take. The context carries the count; the
// data pointer stays null, as upstream's meta allocator leaves it.
struct MetaAllocation {
  int64_t bytes;
  Counter* counter;
};

void free_meta_allocation(void* context) {
  auto* a = static_cast<MetaAllocation*>(context);
  a->counter->current.fetch_sub(a->bytes, std::memory_order_relaxed);
  delete a;
}

class CountingMetaAllocator final : public c10::Allocator {
 public:
  at::DataPtr allocate(std::size_t n) SHARDFUZZ_ALLOCATE_CONST override {
    Counter& c = counter_of_this_allocation(n);
    add(c, static_cast<int64_t>(n));
    return {nullptr, new MetaAllocation{static_cast<int64_t>(n), &c}, &free_meta_allocation,
            c10::Device(c10::DeviceType::Meta)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  SHARDFUZZ_ALLOCATOR_COPY_DATA
};

std::once_flag g_install_once, g_install_meta_once;
std::atomic<bool> g_installed{false};

}  // namespace

void install_counting_allocator() {
  std::call_once(g_install_once, [] {
    keep_freed_host_memory();  // the allocator's posix_memalign would page-fault every case's buffers afresh
    static CountingAllocator allocator;
    c10::SetCPUAllocator(&allocator, /*priority=*/100);
    g_installed = true;
  });
}

bool counting_allocator_installed() { return g_installed.load(); }

void install_counting_meta_allocator() {
  std::call_once(g_install_meta_once, [] {
    static CountingMetaAllocator allocator;
    c10::SetAllocator(c10::DeviceType::Meta, &allocator, /*priority=*/100);
  });
}

RankBytes allocated_bytes(int rank) {
  Counter& c = counter_for(rank);
  return {c.current.load(std::memory_order_relaxed), c.peak.load(std::memory_order_relaxed)};
}

void reset_peak(int rank) {
  Counter& c = counter_for(rank);
  c.peak.store(c.current.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

void arm_allocation_faults(int rank, std::vector<AllocationFault> faults) {
  Counter& c = counter_for(rank);
  c.armed = false;
  c.faults = std::move(faults);
  c.fired.assign(c.faults.size(), false);
  c.base = c.current.load();
  c.allocations = 0;
  c.armed = !c.faults.empty();
}

void disarm_allocation_fault(int rank) { counter_for(rank).armed = false; }

int current_allocation_rank() { return t_rank; }

AllocationRankGuard::AllocationRankGuard(int rank) : previous_(t_rank) {
  counter_for(rank);  // validates
  t_rank = rank;
}
AllocationRankGuard::~AllocationRankGuard() { t_rank = previous_; }

}  // namespace shardfuzz::memory
