// World size and the experts mesh.
#include "fuzz/gen/world.h"

#include "fuzz/gen/choice.h"
#include "fuzz/gen/ladders.h"

#include <rapidcheck/gen/Create.h>

#include <stdexcept>
#include <string>

namespace shardfuzz::fuzz::gen {

rc::Gen<int> world_size(const GenConfig& config) {
  if (config.world < 0) throw std::invalid_argument("GenConfig.world: " + std::to_string(config.world) + " must be >= 0");
  if (config.world > 0) return rc::gen::just(config.world);
  return weighted_choice(ladders::kWorld);
}

rc::Gen<int> expert_shard_size() {
  return weighted_choice(ladders::kExpertShardSize);
}

}  // namespace shardfuzz::fuzz::gen
