// The small vocabulary the edits are written in: a copy with one change, one candidate per
// block or per fully_shard entry, a field set to its simplest value. Internal to fuzz/shrink.
#pragma once

#include "fuzz/shrink/edits/all.h"

#include <cstddef>
#include <string>

namespace shardfuzz::fuzz::shrinking::edits {

// `sc` with `change` applied to a copy.
template <typename Change>
Scenario with(const Scenario& sc, Change change) {
  Scenario s = sc;
  change(s);
  return s;
}

// One candidate per block that `when(block)` holds for: `sc` with `change(block)` on that block.
template <typename When, typename Change>
Candidates each_block(const Scenario& sc, When when, Change change) {
  Candidates out;
  for (std::size_t i = 0; i < sc.blocks.size(); ++i)
    if (when(sc.blocks[i])) out.push_back(with(sc, [&](Scenario& s) { change(s.blocks[i]); }));
  return out;
}

// One candidate per fully_shard entry (in path order) that `when(spec)` holds for: `sc` with
// `change(spec)` on that entry.
template <typename When, typename Change>
Candidates each_placement(const Scenario& sc, When when, Change change) {
  Candidates out;
  for (const auto& [path, spec] : sc.fully_shard)
    if (when(spec)) out.push_back(with(sc, [&, p = path](Scenario& s) { change(s.fully_shard[p]); }));
  return out;
}

// Appends `sc` with `field` set to `simplest`, unless it already is.
template <typename Field>
void push_simplest(Candidates& out, const Scenario& sc, Field Scenario::*field, const Field& simplest) {
  if (sc.*field == simplest) return;
  out.push_back(with(sc, [&](Scenario& s) { s.*field = simplest; }));
}

}  // namespace shardfuzz::fuzz::shrinking::edits
