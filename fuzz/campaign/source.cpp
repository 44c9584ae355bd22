// The generator's draw, and how a draw's origin reads.
#include "fuzz/campaign/source.h"

#include "fuzz/gen/generate.h"

namespace shardfuzz::fuzz {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t case_seed(uint64_t campaign_seed, int k) { return splitmix64(campaign_seed * 0x100000001b3ULL + static_cast<uint64_t>(k)); }

int case_size(int k) { return 10 + (k % 10) * 10; }  // 10..100, cycling: small cases come often

std::string Draw::describe() const {
  switch (origin) {
    case Origin::Generated: return "generated";
    case Origin::Replayed: return "replay of " + from;
    case Origin::Mutant: return "mutant of " + from;
  }
  return "generated";
}

Draw GeneratorSource::draw(uint64_t seed, int size) { return {generate_shrinkable(gen_, seed, size), Draw::Origin::Generated, ""}; }

}  // namespace shardfuzz::fuzz
