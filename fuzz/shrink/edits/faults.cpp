// Edits of the fault plan: fewer faults, then each one earlier, on rank 0, and (a straggler)
// shorter. Every fault-plan edit lives here, so that a change to FaultSpec touches one file.
#include "fuzz/shrink/edits/helpers.h"

#include <algorithm>

namespace shardfuzz::fuzz::shrinking::edits {

namespace {

using harness::AllocationFault;
using harness::CollectiveFault;
using harness::FaultSpec;
using harness::ModuleFault;

// Simpler versions of one fault, in the order tried: an earlier collective, rank 0, an earlier
// allocation (oom), step 0 (in a module), a shorter delay (straggler).
std::vector<FaultSpec> simpler(const FaultSpec& f) {
  std::vector<FaultSpec> out;
  auto push = [&](auto change) { out.push_back(f), change(out.back()); };
  const CollectiveFault* c = f.at_collective();
  for (int k : c ? std::vector<int>{0, c->collective / 2, c->collective - 1} : std::vector<int>{})
    if (k >= 0 && k < c->collective) push([k](FaultSpec& g) { std::get<CollectiveFault>(g.fault).collective = k; });
  if (f.rank > 0) push([](FaultSpec& g) { g.rank = 0; });
  const auto* at = f.in_allocator() ? std::get_if<AllocationFault::AtAllocation>(&f.in_allocator()->trigger) : nullptr;
  for (int a : at ? std::vector<int>{0, at->index / 2, at->index - 1} : std::vector<int>{})
    if (a >= 0 && a < at->index)
      push([a](FaultSpec& g) { std::get<AllocationFault>(g.fault).trigger = AllocationFault::AtAllocation{a}; });
  if (f.in_module() && f.in_module()->step > 0) push([](FaultSpec& g) { std::get<ModuleFault>(g.fault).step = 0; });
  if (f.is(CollectiveFault::Kind::Straggler) && c->delay_ms > 1)
    push([c](FaultSpec& g) { std::get<CollectiveFault>(g.fault).delay_ms = std::max(1, c->delay_ms / 2); });
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
