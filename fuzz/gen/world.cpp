// World size and the experts mesh.
#include "fuzz/gen/world.h"

#include "fuzz/gen/choice.h"

#include <rapidcheck/gen/Create.h>

#include <stdexcept>
#include <string>

namespace shardfuzz::fuzz::gen {

rc::Gen<int> world_size(const GenConfig& config) {
  if (config.world < 0) throw std::invalid_argument("GenConfig.world: " + std::to_string(config.world) + " must be >= 0");
  if (config.world > 0) return rc::gen::just(config.world);
  return weighted_choice<int>({{2, 1}, {4, 2}, {1, 3}, {4, 4}, {1, 5}, {1, 6}, {1, 7}, {2, 8}});
}

rc::Gen<int> expert_shard_size() {
  return weighted_choice<int>({{9, 0}, {1, 1}, {2, 2}, {1, 3}, {1, 4}, {1, 8}});
}

}  // namespace shardfuzz::fuzz::gen
