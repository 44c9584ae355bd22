// Edits of the fault plan: fewer faults, then each one earlier, on rank 0, and (a straggler)
// shorter. Every fault-plan edit lives here, so that a change to FaultSpec touches one file.
#include "fuzz/shrink/edits/helpers.h"

#include <algorithm>

namespace shardfuzz::fuzz::shrinking::edits {

namespace {

using harness::FaultSpec;

// Simpler versions of one fault, in the order tried: an earlier collective, rank 0, an earlier
// allocation (oom), step 0 (in a module), a shorter delay (straggler).
std::vector<FaultSpec> simpler(const FaultSpec& f) {
  std::vector<FaultSpec> out;
  auto push = [&](auto change) { out.push_back(f), change(out.back()); };
  for (int c : {0, f.collective / 2, f.collective - 1})
    if (c >= 0 && c < f.collective) push([c](FaultSpec& g) { g.collective = c; });
  if (f.rank > 0) push([](FaultSpec& g) { g.rank = 0; });
  for (int a : {0, f.allocation / 2, f.allocation - 1})
    if (f.kind == "oom" && a >= 0 && a < f.allocation) push([a](FaultSpec& g) { g.allocation = a; });
  if (f.is_in_module() && f.step > 0) push([](FaultSpec& g) { g.step = 0; });
  if (f.kind == "straggler" && f.delay_ms > 1) push([&](FaultSpec& g) { g.delay_ms = std::max(1, f.delay_ms / 2); });
  return out;
}

}  // namespace

Candidates drop_a_fault(const Scenario& sc) {
  Candidates out;
  for (std::size_t i = 0; i < sc.faults.size(); ++i)
    out.push_back(with(sc, [i](Scenario& s) { s.faults.erase(s.faults.begin() + static_cast<std::ptrdiff_t>(i)); }));
  return out;
}

// Fault by fault, each of its simpler versions.
Candidates simplify_a_fault(const Scenario& sc) {
  Candidates out;
  for (std::size_t i = 0; i < sc.faults.size(); ++i)
    for (const FaultSpec& g : simpler(sc.faults[i])) out.push_back(with(sc, [&](Scenario& s) { s.faults[i] = g; }));
  return out;
}

}  // namespace shardfuzz::fuzz::shrinking::edits
