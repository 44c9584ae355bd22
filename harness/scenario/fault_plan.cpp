// The typed fault plan: names, and what each kind means for detection and recovery (its JSON form:
// fault_json.cpp).
#include "harness/scenario/fault_plan.h"

namespace shardfuzz::harness {

std::string FaultSpec::kind_name() const {
  if (const auto* c = at_collective()) return name_of(c->kind);
  if (const auto* m = in_module()) return name_of(m->kind);
  return kOomFaultName;
}

bool FaultSpec::must_be_detected(int deadline_ms, bool recovery) const {
  if (is_nonfinite() || (recovery && is_recoverable())) return false;
  return !is(CollectiveFault::Kind::Straggler) || at_collective()->delay_ms >= deadline_ms;
}

FaultSpec FaultSpec::collective_fault(int rank, CollectiveFault::Kind kind, int collective, int delay_ms) {
  return {rank, CollectiveFault{kind, collective, delay_ms}};
}

FaultSpec FaultSpec::module_fault(int rank, ModuleFault::Kind kind, std::string module, int step, ModuleFault::Pass pass) {
  return {rank, ModuleFault{kind, std::move(module), step, pass}};
}

FaultSpec FaultSpec::oom_at_allocation(int rank, int allocation) {
  return {rank, AllocationFault{AllocationFault::AtAllocation{allocation}}};
}

FaultSpec FaultSpec::oom_above_bytes(int rank, int64_t limit_bytes) {
  return {rank, AllocationFault{AllocationFault::AboveBytes{limit_bytes}}};
}

const std::vector<std::string>& fault_kinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> out;
    for (const auto& entry : EnumNames<CollectiveFault::Kind>::table) out.push_back(entry.second);
    for (const auto& entry : EnumNames<ModuleFault::Kind>::table) out.push_back(entry.second);
    out.push_back(kOomFaultName);
    return out;
  }();
  return kinds;
}

}  // namespace shardfuzz::harness
