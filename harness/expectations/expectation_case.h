// An upstream FSDP2 test's expectations as data (tests/upstream/cases/*.json, made by
// tests/upstream/make_cases.py): the scenario it runs, under the profile the test assumes, and what
// the test asserts, in upstream's vocabulary: event lists per phase, collective counts, which groups
// are unsharded after a phase, properties that must hold, and memory bounds by upstream's formula.
#pragma once

#include "harness/expectations/memory_formula.h"
#include "harness/expectations/upstream_view.h"
#include "harness/scenario/scenario.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace shardfuzz::harness::expectations {

struct ExpectedEvents {
  PhaseRef where;
  std::vector<UpstreamEvent> events;
};

// -1: not asserted.
struct ExpectedCounts {
  PhaseRef where;
  int all_gathers = -1;
  int reduce_scatters = -1;
};

// The groups holding unsharded parameters when the phase ends (upstream's registration tests:
// unsharded parameters registered after forward without reshard_after_forward, sharded otherwise).
struct ExpectedUnsharded {
  PhaseRef where;
  std::vector<std::string> modules;  // upstream names ("" is the root), sorted
};

struct MemoryBound {
  PhaseRef where;
  MemoryFormula formula;
  double max_ratio = 1.0;  // measured / formula must stay at or under it
};

struct ExpectationCase {
  std::string name;      // the file's stem
  std::string upstream;  // "test_fully_shard_comm.py::test_..." and the sub-test
  std::string note;      // where the translation differs from upstream, if it does
  Scenario scenario;
  std::vector<std::string> record;  // the event kinds the upstream test records
  std::vector<ExpectedEvents> events;
  std::vector<ExpectedCounts> counts;
  std::vector<ExpectedUnsharded> unsharded;
  std::vector<std::string> properties;  // shardfuzz properties that must pass (parity: upstream's
                                        // numerical checks)
  std::vector<MemoryBound> memory;
};

// Reads a case; std::invalid_argument naming the JSON path of the first bad value.
ExpectationCase case_from_json(const nlohmann::json& json, const std::string& name);
// std::runtime_error for a file that cannot be read; messages start with the path.
ExpectationCase load_case(const std::string& path);

}  // namespace shardfuzz::harness::expectations
