// Structure-aware mutation of a scenario, for coverage-guided campaigns (fuzz/coverage): what
// libFuzzer's mutators do to bytes, done to the scenario's structure. A mutant is 1-3 named edits
// of a corpus scenario — flip a block's AC mode, add or drop a group, change a prefetch list or a
// reshard_after_forward, add or drop a block, change a block's options, the step's shape or the
// world, splice a block from a fresh draw, or take one of the shrinker's steps — then
// gen::repair(), kept only if it validates and differs from its parent. The same (parent, seed,
// config) always gives the same mutant.
#pragma once

#include "fuzz/gen/gen_config.h"
#include "harness/scenario/scenario.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardfuzz::fuzz {

struct Mutant {
  harness::Scenario scenario;
  std::vector<std::string> edits;  // what was done, in order ("flip an AC mode (layers.1: none -> reentrant)")
};

// A valid mutant of `parent` that differs from it; what the caller pinned (config.world,
// config.profile) is kept. When ten tries give nothing valid, a fresh draw of the generator
// (edits: "fresh draw").
Mutant mutate(const harness::Scenario& parent, uint64_t seed, const GenConfig& config);

// The names of the mutation kinds, for docs and tests.
const std::vector<std::string>& mutation_names();

}  // namespace shardfuzz::fuzz
