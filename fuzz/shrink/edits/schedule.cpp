// Edits of the rank-thread schedule (comm/schedule.h): the canonical order first, then no draws
// (seed 0), then fewer switches (delta debugging: halves, quarters, ... single switches), then each
// switch to the nearest other candidate. A schedule-dependent finding then keeps only the preemptions it needs.
#include "fuzz/shrink/edits/helpers.h"

#include <algorithm>

namespace shardfuzz::fuzz::shrinking::edits {

namespace {

// Delta debugging's chunks, coarsest first, down to single switches while a chunk size gives at
// most this many candidates (a long list loses big chunks first, then finer ones on later steps).
constexpr std::size_t kMostChunks = 64;

}  // namespace

Candidates canonical_schedule(const Scenario& sc) {
  if (!sc.schedule) return {};
  return {with(sc, [](Scenario& s) { s.schedule.reset(); })};
}

Candidates fewer_switches(const Scenario& sc) {
  if (!sc.schedule) return {};
  const auto& switches = sc.schedule->switches;
  Candidates out;
  if (sc.schedule->seed != 0) out.push_back(with(sc, [](Scenario& s) { s.schedule->seed = 0; }));
  const std::size_t n = switches.size();
  for (std::size_t size = std::max<std::size_t>(1, n / 2); n > 0 && (n + size - 1) / size <= kMostChunks; size /= 2) {
    for (std::size_t begin = 0; begin < n; begin += size)
      out.push_back(with(sc, [&](Scenario& s) {
        auto& list = s.schedule->switches;
        list.erase(list.begin() + static_cast<std::ptrdiff_t>(begin),
                   list.begin() + static_cast<std::ptrdiff_t>(std::min(n, begin + size)));
      }));
    if (size == 1) break;
  }
  for (std::size_t i = 0; i < n && i < kMostChunks; ++i)
    if (switches[i].candidate > 1) out.push_back(with(sc, [i](Scenario& s) { s.schedule->switches[i].candidate = 1; }));
  return out;
}

}  // namespace shardfuzz::fuzz::shrinking::edits
