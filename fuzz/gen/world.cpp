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
  if (config.max_world < 1)
    throw std::invalid_argument("GenConfig.max_world: " + std::to_string(config.max_world) + " must be >= 1");
  if (config.max_world >= 8) return weighted_choice(ladders::kWorld);  // the whole ladder: every seed as before
  ladders::Ladder<int> upto;
  for (const auto& rung : ladders::kWorld)
    if (rung.second <= config.max_world) upto.push_back(rung);
  return weighted_choice(upto);
}

rc::Gen<int> expert_shard_size() {
  return weighted_choice(ladders::kExpertShardSize);
}

}  // namespace shardfuzz::fuzz::gen
