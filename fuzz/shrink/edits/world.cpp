// Edits of the world and its meshes: a smaller world, no experts mesh (HSDP off).
#include "fuzz/gen/ladders.h"
#include "fuzz/shrink/edits/helpers.h"

#include <algorithm>

namespace shardfuzz::fuzz::shrinking::edits {

// A smaller world: 1, its proper divisors, then world - 1.
Candidates smaller_world(const Scenario& sc) {
  std::vector<int> worlds;
  for (int d = 1; d < sc.world_size; ++d)
    if (sc.world_size % d == 0) worlds.push_back(d);
  if (sc.world_size > 1 && std::find(worlds.begin(), worlds.end(), sc.world_size - 1) == worlds.end())
    worlds.push_back(sc.world_size - 1);
  Candidates out;
  for (int w : worlds) out.push_back(with(sc, [w](Scenario& s) { s.world_size = w; }));
  return out;
}

Candidates no_experts_mesh(const Scenario& sc) {
  Candidates out;
  push_simplest(out, sc, &Scenario::expert_shard_size, gen::ladders::simplest(gen::ladders::kExpertShardSize));
  return out;
}

}  // namespace shardfuzz::fuzz::shrinking::edits
