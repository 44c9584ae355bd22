// One block of the model with everything that hangs off it: MoE or MLP, gated, AC mode, frozen,
// and its placements — fully_shard on the block and on any of its submodules (experts, attn,
// moe, router, mlp, fc1, fc2), each with its options and prefetch lists.
#pragma once

#include "fuzz/gen/detail/draws.h"

#include <rapidcheck/Gen.h>

namespace shardfuzz::fuzz::gen {

// Shrinks in this order: unwrap the block and its submodules, AC off (reentrant: to none, then
// non_reentrant), MLP, ungated, not frozen, simpler options, prefetch lists absent.
rc::Gen<detail::BlockDraw> block(const detail::BlockWeights& weights);

}  // namespace shardfuzz::fuzz::gen
