// How a schedule decides, and how its record reads.
#include "runtime/comm/schedule.h"

#include <algorithm>
#include <cstdio>

namespace shardfuzz::comm {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t Schedule::choose(uint64_t decision, uint64_t candidates) const {
  if (candidates < 2) return 0;
  const auto it = std::lower_bound(switches.begin(), switches.end(), std::make_pair(decision, uint64_t{0}));
  if (it != switches.end() && it->first == decision) return it->second % candidates;
  if (seed == 0) return 0;
  // A seed's preemption rate (PCT's insight: most schedule bugs need few preemptions, some need
  // many): 1, 4, 8 or 16 in 16 decisions switch, fixed per seed; each decision's draw depends only
  // on (seed, decision).
  static constexpr uint64_t kRateIn16[] = {1, 4, 8, 16};
  const uint64_t rate = kRateIn16[mix(seed) % 4];
  const uint64_t draw = mix(seed ^ mix(decision + 1));
  if (draw % 16 >= rate) return 0;
  return 1 + (draw >> 8) % (candidates - 1);
}

std::string fingerprint_hex(uint64_t fingerprint) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(fingerprint));
  return text;
}

std::string ScheduleRecord::summary() const {
  if (!scheduled) return "unscheduled (the OS ran the rank threads)";
  return std::to_string(decisions) + " decisions, " + std::to_string(switches.size()) + " switches, clock " +
         std::to_string(clock_ms) + " ms, fingerprint " + fingerprint_hex(fingerprint);
}

}  // namespace shardfuzz::comm
