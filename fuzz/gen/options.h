// fully_shard options of one placement: reshard_after_forward (auto, true, false, int N), and for
// expert modules the HSDP experts mesh and Shard(1). Ints, meshes and shard dims are drawn
// independently of the world; repair() makes them legal for the scenario they end up in.
#pragma once

#include "harness/scenario/scenario.h"
#include "runtime/fsdp/options.h"

#include <rapidcheck/Gen.h>

namespace shardfuzz::fuzz::gen {

// auto 4 : true 2 : false 2 : int 1; N from {2, 4, 3, 8} (then cut to a divisor of the shard
// group). Shrinks toward auto.
rc::Gen<fsdp::ReshardAfterForward> reshard_after_forward();

// Options of a dense module (or the root, the head): reshard_after_forward only, mesh "dp".
rc::Gen<harness::ShardSpec> dense_options();

// Options of layers.i.moe.experts: also mesh "experts" (dp 3 : experts 1) and Shard(1)
// (0 4 : 1 1, kept only when dims.dim and dims.hidden divide by the shard group).
rc::Gen<harness::ShardSpec> experts_options();

}  // namespace shardfuzz::fuzz::gen
