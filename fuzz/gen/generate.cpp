// Seeded draws of the scenario generator.
#include "fuzz/gen/generate.h"

#include "fuzz/gen/scenario.h"

#include <rapidcheck/Random.h>
#include <rapidcheck/shrinkable/Transform.h>

#include <string>

namespace shardfuzz::fuzz {

rc::Shrinkable<harness::Scenario> generate_shrinkable(const GenConfig& config, uint64_t seed, int size) {
  const std::string name = "gen seed=" + std::to_string(seed) + " size=" + std::to_string(size);
  return rc::shrinkable::map(gen::scenario(config)(rc::Random(seed), size), [name](harness::Scenario sc) {
    sc.name = name;
    return sc;
  });
}

harness::Scenario generate(const GenConfig& config, uint64_t seed, int size) {
  return generate_shrinkable(config, seed, size).value();
}

}  // namespace shardfuzz::fuzz
