// What the fault tests share: a small scenario (one gated MoE block with nested experts), fault
// plans, a short collective deadline (with or without recovery), a verdict by name, and a
// rejection checked by the field it names.
#pragma once

#include "harness/properties/property.h"
#include "harness/scenario/standard_scenarios.h"
#include "harness/backends/threads/threads_backend.h"
#include "harness/scenario/scenario_json.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardfuzz::harness::testing_support {

inline Scenario small(int world = 3) {
  Scenario sc = nested_experts_scenario(1, true, world, "strict", 1);
  sc.dims.dim = 8;
  sc.dims.hidden = 8;
  sc.dims.tokens = 4;
  return sc;
}

// One more planned fault: at a collective (straggler, collective_error, hang, crash, abort), in a
// module (exception), or in the allocator (oom at an allocation, or above a limit).
// `kind` by its name ("crash"); `pass` too ("forward"). An oom at an allocation (limit_bytes 0) or
// above a limit.
inline Scenario with_fault(Scenario sc, const std::string& kind, int rank, int collective, int delay_ms = 0) {
  sc.faults.push_back(FaultSpec::collective_fault(rank, *enum_from_name<CollectiveFault::Kind>(kind), collective, delay_ms));
  return sc;
}

inline Scenario with_exception(Scenario sc, int rank, const std::string& module, const std::string& pass, int step) {
  sc.faults.push_back(FaultSpec::module_fault(rank, ModuleFault::Kind::Exception, module, step,
                                              *enum_from_name<ModuleFault::Pass>(pass)));
  return sc;
}

inline Scenario with_oom(Scenario sc, int rank, int allocation, int64_t limit_bytes = 0) {
  sc.faults.push_back(limit_bytes > 0 ? FaultSpec::oom_above_bytes(rank, limit_bytes) : FaultSpec::oom_at_allocation(rank, allocation));
  return sc;
}

// A fault plan as the JSON reader sees it (what the typed plan cannot even hold in memory).
inline void expect_plan_rejected(const nlohmann::json& fault, const std::string& prefix) {
  nlohmann::json j = to_json(small());
  j["faults"] = nlohmann::json::array({fault});
  try {
    scenario_from_json(j);
    ADD_FAILURE() << "accepted " << fault.dump() << "; expected " << prefix;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

inline RunOptions short_deadline() {
  RunOptions o;
  o.deadline = std::chrono::milliseconds(500);
  return o;
}

// An oom or exception then stops the run, as every other fault does (no recovery).
inline RunOptions without_recovery() {
  RunOptions o = short_deadline();
  o.recover = false;
  return o;
}

inline const Verdict& verdict(const std::vector<Verdict>& vs, const std::string& name) {
  return *std::find_if(vs.begin(), vs.end(), [&](const Verdict& v) { return v.property == name; });
}

inline void expect_rejected(const Scenario& sc, const std::string& prefix) {
  try {
    sc.validate();
    ADD_FAILURE() << "accepted; expected " << prefix;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << e.what();
  }
}

}  // namespace shardfuzz::harness::testing_support
