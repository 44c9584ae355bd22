// Turning the raw draws into a Scenario: fully_shard paths from block indices, the root always,
// relative prefetch targets resolved, torchtitan's layout laid out (repair() follows, in gen/scenario.cpp). Internal.
#pragma once

#include "fuzz/gen/detail/draws.h"

namespace shardfuzz::fuzz::gen::detail {

// Whether module `sub` exists in a block of this kind (the router only in gated MoE blocks).
bool sub_exists(std::size_t sub, const harness::BlockSpec& block);

// The scenario the draws describe, before repair() (gen/repair.h; gen/scenario.cpp applies it).
harness::Scenario assemble(const ScenarioDraw& draw);

}  // namespace shardfuzz::fuzz::gen::detail
