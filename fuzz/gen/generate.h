// One scenario from a seed, deterministically: `shardfuzz gen --seed S` prints it, and the
// campaign draws case k from its own seed, so any case is reproducible from (config, seed, size)
// alone, on any rank, with no RapidCheck run state.
#pragma once

#include "fuzz/gen/gen_config.h"
#include "harness/scenario/scenario.h"

#include <rapidcheck/Shrinkable.h>

#include <cstdint>

namespace shardfuzz::fuzz {

// gen::scenario(config) drawn with rc::Random(seed) at `size` (0-100; 100 is RapidCheck's
// default maximum). The scenario is named "gen seed=S size=N".
harness::Scenario generate(const GenConfig& config, uint64_t seed, int size);

// The same draw with its shrink tree (value() == generate(config, seed, size)), for shrink().
rc::Shrinkable<harness::Scenario> generate_shrinkable(const GenConfig& config, uint64_t seed, int size);

}  // namespace shardfuzz::fuzz
