// Property: the run fits the device. With Scenario::device_memory_bytes set, no rank's training
// memory (the allocator probe above the rank runtime's start) ever exceeds it; a violation names the
// first event past the budget (rank, step, event, group: the layer where a real run of that size
// would run out of memory) and the rank's peak.
#include "harness/properties/property.h"

#include <algorithm>

namespace shardfuzz::harness {

Verdict check_fits_device_memory(const Scenario& sc, const RunRecord& run) {
  if (sc.device_memory_bytes == 0) return {"fits_device_memory", true, true, "no device-memory budget (unbounded)"};
  if (!run.observed.allocator)
    return {"fits_device_memory", true, true, "the " + run.backend + " backend has no allocator probe"};
  for (const RankRecord& r : run.ranks) {
    const memory::TimelineEvent* first = nullptr;
    int64_t peak = 0;
    for (const auto& e : r.timeline) {
      if (!first && e.allocated_bytes > sc.device_memory_bytes) first = &e;
      peak = std::max(peak, e.allocated_bytes);
    }
    if (first)
      return {"fits_device_memory", false, false,
              "rank " + std::to_string(r.rank) + " step " + std::to_string(first->step + 1) + ": after " +
                  memory::name_of(first->event) + " of " + first->group + " it holds " + std::to_string(first->allocated_bytes) +
                  " bytes, over its device memory of " + std::to_string(sc.device_memory_bytes) + " (peak " +
                  std::to_string(peak) + " bytes)"};
  }
  return {"fits_device_memory", true, false,
          "every rank stayed within its device memory of " + std::to_string(sc.device_memory_bytes) + " bytes"};
}

}  // namespace shardfuzz::harness
