// The structural shrinker's catalogue: named edits of a scenario, each giving the candidates it
// makes of a scenario, biggest first. The catalogue is one ordered list (catalogue.cpp); the edits
// are grouped by concept in edits/*.cpp. To add an edit: write it in the file of its concept,
// declare it in edits/all.h and put it in the list where the greedy descent should try it.
#pragma once

#include "fuzz/shrink/structural_options.h"
#include "fuzz/shrink/driver.h"
#include "harness/scenario/scenario.h"

#include <string>
#include <vector>

namespace shardfuzz::fuzz::shrinking {

struct Edit {
  const char* name;  // what progress lines call an accepted step of it ("drop blocks")
  std::vector<harness::Scenario> (*candidates)(const harness::Scenario&);  // raw: repaired later
};

// The edits in the order their candidates are tried; `options` leaves out those it forbids.
std::vector<Edit> catalogue(const StructuralShrinkOptions& options = {});

// Every edit's candidates for `scenario`, in catalogue order, each passed through gen::repair()
// and kept only if it validates and differs from `scenario` and from every earlier candidate.
std::vector<Candidate<harness::Scenario>> structural_candidates(const harness::Scenario& scenario,
                                                                const StructuralShrinkOptions& options = {});

// What changed from `before` to `after`, briefly ("blocks 4 -> 3", "dims.dim 16 -> 8",
// "fully_shard[layers.0].mesh experts -> dp"): the names of steps in a generator's tree.
std::string describe_change(const harness::Scenario& before, const harness::Scenario& after);

// A rough price of running `scenario`: its ranks x its forwards (and backwards) over every step.
// The shrinker tries the candidates with fewer ranks or steps first, so every later run is cheaper.
double run_cost(const harness::Scenario& scenario);

}  // namespace shardfuzz::fuzz::shrinking
