// The generator's draw, and how a draw's origin reads.
#include "fuzz/campaign/source.h"

#include "fuzz/gen/generate.h"

#include <rapidcheck/shrinkable/Transform.h>

namespace shardfuzz::fuzz {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The recoverable fault a fault-free case gets (GenConfig::recoverable_fault_percent), from bits of
// `roll`: on a drawn rank, two in three an oom at one of the first 300 allocations, one in three an
// exception in a drawn module's forward or backward at a drawn step (a fault the run never reaches
// does not fire). Recovery then starts from every rank and from every point of a step.
harness::FaultSpec recoverable_fault(const harness::Scenario& sc, uint64_t roll) {
  const int rank = static_cast<int>((roll >> 8) % static_cast<uint64_t>(sc.world_size));
  if ((roll >> 16) % 3 != 2) return harness::FaultSpec::oom_at_allocation(rank, static_cast<int>((roll >> 20) % 300));
  const std::vector<std::string> modules = sc.module_paths();
  const std::string module = modules.at((roll >> 32) % modules.size());
  const int step = static_cast<int>((roll >> 44) % static_cast<uint64_t>(sc.steps));
  const auto pass = (roll >> 52) % 2 ? harness::ModuleFault::Pass::Backward : harness::ModuleFault::Pass::Forward;
  return harness::FaultSpec::module_fault(rank, harness::ModuleFault::Kind::Exception, module, step, pass);
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

Draw GeneratorSource::draw(uint64_t seed, int size) {
  rc::Shrinkable<harness::Scenario> drawn = generate_shrinkable(gen_, seed, size);
  const uint64_t roll = splitmix64(seed ^ 0x7265636f76657279ULL);  // "recovery": apart from the generator's stream
  if (!gen_.faults && static_cast<int>(roll % 100) < gen_.recoverable_fault_percent) {
    drawn = rc::shrinkable::map(std::move(drawn), [roll](harness::Scenario sc) {
      if (sc.faults.empty()) sc.faults.push_back(recoverable_fault(sc, roll));
      return sc;
    });
  }
  const uint64_t schedule_roll = splitmix64(seed ^ 0x7363686564756c65ULL);  // "schedule"
  if (static_cast<int>(schedule_roll % 100) < gen_.seeded_schedule_percent) {
    const uint64_t schedule_seed = splitmix64(schedule_roll) | 1;  // never 0, the canonical schedule
    drawn = rc::shrinkable::map(std::move(drawn), [schedule_seed](harness::Scenario sc) {
      if (sc.world_size > 1 && !sc.schedule) sc.schedule = harness::ScheduleSpec{schedule_seed, {}};
      return sc;
    });
  }
  return {std::move(drawn), Draw::Origin::Generated, ""};
}

}  // namespace shardfuzz::fuzz
