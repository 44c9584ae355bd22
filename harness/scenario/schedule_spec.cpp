// A scenario's schedule, as the runtime takes it.
#include "harness/scenario/schedule_spec.h"

namespace shardfuzz::harness {

comm::Schedule ScheduleSpec::to_comm() const {
  comm::Schedule out;
  out.seed = seed;
  for (const ScheduleSwitch& s : switches)
    out.switches.emplace_back(static_cast<uint64_t>(s.decision), static_cast<uint64_t>(s.candidate));
  return out;
}

std::optional<ScheduleSpec> ScheduleSpec::replaying(const comm::ScheduleRecord& record) {
  if (record.switches.empty()) return std::nullopt;
  ScheduleSpec out;
  for (const auto& [decision, candidate] : record.switches)
    out.switches.push_back({static_cast<int64_t>(decision), static_cast<int64_t>(candidate)});
  return out;
}

}  // namespace shardfuzz::harness
