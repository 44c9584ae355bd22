// Runs an expectation case natively (threads backend, under the case's profile) and names every way
// the run differs from what upstream's test asserts: rank, phase, module, event index, expected and
// got. Also reports each memory bound's measured bytes against upstream's formula.
#pragma once

#include "harness/expectations/expectation_case.h"
#include "harness/run/run_record.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardfuzz::harness::expectations {

struct Mismatch {
  int rank = 0;
  std::string where;   // the phase's label, or "run" / "property"
  std::string module;  // upstream name of the group ("" the root), when one is concerned
  int index = -1;      // event index in the projected list (-1: not an event)
  std::string expected;
  std::string got;
  std::string message() const;
};

struct MemoryMeasurement {
  std::string where;
  int rank = 0;            // the rank with the highest peak
  int64_t measured = 0;    // peak bytes since wrapping, at the phase's end (upstream: peak active bytes)
  int64_t formula = 0;
  double ratio = 0;        // measured / formula
  double max_ratio = 1.0;
};

struct CaseResult {
  std::vector<Mismatch> mismatches;
  std::vector<MemoryMeasurement> memory;
  bool ok() const { return mismatches.empty(); }
};

CaseResult check_case(const ExpectationCase& c);
// The checks over a finished run (check_case's second half; tests use it on hand-made records).
CaseResult check_run(const ExpectationCase& c, const RunRecord& run);

}  // namespace shardfuzz::harness::expectations
