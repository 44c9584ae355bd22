// What the fault tests share: a small scenario (one gated MoE block with nested experts), fault
// plans, a short collective deadline (with or without recovery), a verdict by name, and a
// rejection checked by the field it names.
#pragma once

#include "harness/properties/property.h"
#include "harness/standard_scenarios.h"
#include "harness/backends/threads/threads_backend.h"

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
inline Scenario with_fault(Scenario sc, const std::string& kind, int rank, int collective, int delay_ms = 0) {
  sc.faults.push_back({kind, rank, collective, delay_ms, "", "", 0});
  return sc;
}

inline Scenario with_exception(Scenario sc, int rank, const std::string& module, const std::string& pass, int step) {
  sc.faults.push_back({"exception", rank, 0, 0, module, pass, step});
  return sc;
}

inline Scenario with_oom(Scenario sc, int rank, int allocation, int64_t limit_bytes = 0) {
  FaultSpec f;
  f.kind = "oom";
  f.rank = rank;
  f.allocation = allocation;
  f.limit_bytes = limit_bytes;
  sc.faults.push_back(f);
  return sc;
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
