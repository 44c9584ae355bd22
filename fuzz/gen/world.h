// The world: its size (1-8 unless pinned by the config) and the experts mesh
// (expert_shard_size: 0 most often, else a divisor of the world — made one by repair()).
#pragma once

#include "fuzz/gen/gen_config.h"

#include <rapidcheck/Gen.h>

namespace shardfuzz::fuzz::gen {

// Pinned: always config.world, no shrinks. Else 1:2, 2:4, 3:1, 4:4, 5:1, 6:1, 7:1, 8:2;
// shrinks toward 1.
rc::Gen<int> world_size(const GenConfig& config);

// 0 9 : 1 1 : 2 2 : 3 1 : 4 1 : 8 1, shrinks toward 0; repair() takes gcd(k, world).
rc::Gen<int> expert_shard_size();

}  // namespace shardfuzz::fuzz::gen
