// Named scenarios the project refers to: the seed leak's model (gated MoE blocks with nested
// experts, full non-reentrant AC, a separately wrapped head) and the standard small scenario of
// the benchmarks. Plain functions of plain data.
#pragma once

#include "harness/scenario/scenario.h"

#include <string>

namespace shardfuzz::harness {

// `blocks` gated (or ungated) MoE blocks, each block and its experts fully_shard-ed, non-reentrant
// full AC, `out` and the root wrapped; dim 64, 4 experts, hidden 128, 32 tokens, SGD.
Scenario nested_experts_scenario(int blocks, bool gated, int world_size, const std::string& profile, int steps = 2);

// The benchmarks' standard small scenario: 4 gated MoE blocks (dim 64, 4 experts, hidden 128),
// experts nested, non-reentrant full AC, separately wrapped head, 32 tokens, world 4, 2 steps, SGD.
Scenario standard_small_scenario(const std::string& profile = "torch-2.11");

// The benchmarks' large model (issue 8's GPU row): the same shape at size — 8 gated MoE blocks,
// dim 4096, 4 experts of hidden 1024 (dense: every expert sees every token), 2048 tokens, bfloat16
// parameters, experts nested, non-reentrant full AC, world 1, 2 steps of SGD on the mean loss.
// 0.84 GB of parameters: inside the size budget, and a step is ~6.6 TFLOP of GPU work.
Scenario standard_large_scenario(const std::string& profile = "torch-2.11");

}  // namespace shardfuzz::harness
