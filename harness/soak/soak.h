// Soak: one scenario for many steps (`shardfuzz run FILE --soak N`), checking that memory stays
// flat — every rank's allocator bytes at each step's end equal from step 2 on (step 1 creates the
// optimizer's state), exactly, and the process's resident set grows by no more than a tolerance
// between the end of the warm-up (a tenth of the steps, at least step 2) and the last step. The
// allocator check catches a tensor the runtime keeps per step; the resident-set check catches what
// the allocator cannot see (host-side bookkeeping, a std::vector the runtime appends to per step).
// The timeline is off for a soak: it would grow by design.
#pragma once

#include "harness/run/run_record.h"
#include "harness/scenario/scenario.h"

#include <cstdint>
#include <string>

namespace shardfuzz::harness {

struct SoakReport {
  bool ok = true;
  bool skipped = false;  // too few steps, or the backend recorded none
  std::string message;   // what, where, how much
  int warmup_steps = 0;
  int64_t rss_at_warmup = 0;
  int64_t rss_at_end = 0;
  int64_t rss_tolerance = 0;
  double seconds = 0;  // the soak run's wall clock (run_soak)
};

inline constexpr int kMinSoakSteps = 20;
inline constexpr int64_t kSoakRssSlackBytes = int64_t{4} << 20;  // or 1% of the resident set, the larger

SoakReport check_soak(const Scenario& scenario, const RunRecord& run);
// Runs `scenario` (its steps: the soak's length) on the threads backend with the timeline off, and
// checks it.
SoakReport run_soak(const Scenario& scenario);

}  // namespace shardfuzz::harness
