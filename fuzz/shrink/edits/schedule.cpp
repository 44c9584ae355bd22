// Edits of the rank-thread schedule (comm/schedule.h): the canonical order first, then no draws
// (seed 0), then fewer switches (halves, then one at a time), then each switch to the nearest
// other candidate. A schedule-dependent finding then keeps only the preemptions it needs.
#include "fuzz/shrink/edits/helpers.h"

namespace shardfuzz::fuzz::shrinking::edits {

namespace {

// One switch at a time only while the list is short; halves take a long one down first.
constexpr std::size_t kOneByOne = 16;

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
  const auto keep = [&](std::size_t begin, std::size_t end) {
    out.push_back(with(sc, [&](Scenario& s) {
      s.schedule->switches.assign(switches.begin() + static_cast<std::ptrdiff_t>(begin),
                                  switches.begin() + static_cast<std::ptrdiff_t>(end));
    }));
  };
  const std::size_t n = switches.size();
  if (n > 1) {
    keep(0, n / 2);
    keep(n / 2, n);
  }
  if (n <= kOneByOne)
    for (std::size_t i = 0; i < n; ++i)
      out.push_back(with(sc, [i](Scenario& s) {
        s.schedule->switches.erase(s.schedule->switches.begin() + static_cast<std::ptrdiff_t>(i));
      }));
  for (std::size_t i = 0; i < n && i < kOneByOne; ++i)
    if (switches[i].candidate > 1) out.push_back(with(sc, [i](Scenario& s) { s.schedule->switches[i].candidate = 1; }));
  return out;
}

}  // namespace shardfuzz::fuzz::shrinking::edits
