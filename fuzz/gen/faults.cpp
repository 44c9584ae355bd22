// Fault plan draws.
#include "fuzz/gen/faults.h"

#include "fuzz/gen/choice.h"
#include "fuzz/gen/list.h"

#include <rapidcheck/gen/Build.h>
#include <rapidcheck/gen/Create.h>
#include <rapidcheck/gen/Numeric.h>
#include <rapidcheck/gen/Transform.h>

namespace shardfuzz::fuzz::gen {

const std::vector<std::string>& default_fault_kinds() {
  static const std::vector<std::string> kinds = {"collective_error", "straggler", "crash", "hang",
                                                 "exception",        "nan",       "inf",   "oom"};
  return kinds;
}

namespace {

// Draw weights: a hang costs a deadline per run; a process abort ends the case's process (drawn
// only when asked for: it is a finding of process_survives every time).
std::size_t weight_of(const std::string& name) {
  using C = harness::CollectiveFault::Kind;
  using M = harness::ModuleFault::Kind;
  if (name == harness::kOomFaultName) return 2;
  if (const auto c = harness::enum_from_name<C>(name)) return *c == C::CollectiveError || *c == C::Straggler ? 3 : *c == C::Crash ? 2 : 1;
  return harness::enum_from_name<M>(name) == M::Exception ? 2 : 1;
}

}  // namespace

rc::Gen<harness::FaultSpec> fault(const std::vector<std::string>& kinds) {
  std::vector<std::pair<std::size_t, std::string>> weighted;
  for (const auto& k : kinds.empty() ? default_fault_kinds() : kinds) weighted.push_back({weight_of(k), k});
  return rc::gen::map(
      rc::gen::tuple(weighted_choice<std::string>(weighted), rc::gen::inRange(0, 8), rc::gen::inRange(0, 61),
                     rc::gen::inRange(1, 51), weighted_choice<std::string>({{1, "forward"}, {1, "backward"}}),
                     rc::gen::inRange(0, 3)),
      [](const std::tuple<std::string, int, int, int, std::string, int>& t) {
        using harness::FaultSpec;
        const std::string& kind = std::get<0>(t);
        const int rank = std::get<1>(t);
        if (auto m = harness::enum_from_name<harness::ModuleFault::Kind>(kind)) {
          // A block by index (repair maps it onto the model), the pass, the step.
          return FaultSpec::module_fault(rank, *m, "layers." + std::to_string(std::get<2>(t) % 4), std::get<5>(t),
                                         *harness::enum_from_name<harness::ModuleFault::Pass>(std::get<4>(t)));
        }
        if (kind == harness::kOomFaultName) {
          // Mostly an allocation index (0-300); one time in three a training-memory limit (1-50 KiB).
          if (std::get<3>(t) % 3 != 0) return FaultSpec::oom_at_allocation(rank, std::get<2>(t) * 5);
          return FaultSpec::oom_above_bytes(rank, int64_t{std::get<3>(t)} * 1024);
        }
        const auto c = *harness::enum_from_name<harness::CollectiveFault::Kind>(kind);
        return FaultSpec::collective_fault(rank, c, std::get<2>(t),
                                           c == harness::CollectiveFault::Kind::Straggler ? std::get<3>(t) : 0);
      });
}

rc::Gen<std::vector<harness::FaultSpec>> fault_plan(bool enabled, const std::vector<std::string>& kinds) {
  if (!enabled) return rc::gen::just(std::vector<harness::FaultSpec>{});
  return bounded_vector<harness::FaultSpec>(1, 2, fault(kinds));
}

}  // namespace shardfuzz::fuzz::gen
