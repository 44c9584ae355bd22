// The scenario generator: a whole sharded-training run, composed from the block, options,
// prefetch, world and dims generators, assembled and repaired so that every value it yields —
// and every shrink of it — passes Scenario::validate(). docs/generators.md lists the weights and
// the shrink order.
#pragma once

#include "fuzz/gen/gen_config.h"
#include "harness/scenario/scenario.h"

#include <rapidcheck/Gen.h>

namespace shardfuzz::fuzz::gen {

// Three draws in four use the plain mix, one the mix biased toward the upstream-bug shape (gated
// MoE blocks with nested experts under AC, head wrapped); both shrink the same way. The size
// (0-100) scales the largest block count: 1 + (max_blocks - 1) * min(size, 50) / 50.
rc::Gen<harness::Scenario> scenario(const GenConfig& config);

}  // namespace shardfuzz::fuzz::gen
