// repair(): makes a combination of independently drawn (or independently shrunk) choices legal,
// so that the generator never needs dependent draws and every shrink stays valid. The generator
// applies it after assembly; shrinkable_from() applies it after every structural edit.
#pragma once

#include "harness/scenario/scenario.h"

namespace shardfuzz::fuzz::gen {

// In order: expert_shard_size becomes gcd(k, world) when it does not divide the world; blocks other
// than the dense MoE lose `gated`; LoRA lists keep the block's linears, once each; dims.heads
// becomes gcd(heads, dim) when some block has attention; dims.top_k is clamped into [1, experts]
// when some block is a routed MoE; expert_parallel is dropped unless expert_shard_size > 0 and
// ep = world / expert_shard_size divides dims.experts, and when kept, every routed block's experts
// are fully_shard-ed on the "experts" mesh and no other module is; fully_shard entries of modules the model lacks are
// dropped and the root ("") is added if missing (with default options); per entry, an unknown
// mesh becomes "dp", an int reshard_after_forward N becomes gcd(N, shard group size) (1 if N < 1),
// a shard_dim that is not legal (not an expert module, > 2, or dims.dim / dims.hidden not
// divisible by the shard group) becomes 0, and prefetch entries that are neither "self" nor a
// fully_shard-ed module are dropped (a list that loses all its entries stays, empty).
// Ranges (world, dims, steps) are left alone: repair fixes combinations, not values.
harness::Scenario repair(harness::Scenario scenario);

}  // namespace shardfuzz::fuzz::gen
