// Blame: which semantics switch a finding is due to, and so which bug-zoo row it rediscovers. A
// failing scenario is re-run with each switch in which its profile deviates from `strict` set as
// strict has it, one at a time; a switch whose flip alone makes every property pass is to blame.
// The row then follows from the switch and the shape of the minimal case, as the zoo table says
// (harness/zoo/zoo_table.h: e.g. the recompute leak is row 1 under reentrant AC and row 5 otherwise).
#pragma once

#include "harness/run/run_record.h"
#include "harness/scenario/scenario.h"

#include <string>
#include <vector>

namespace shardfuzz::harness::zoo {

struct Blame {
  std::string switch_name;  // e.g. "post_forward_reshards_during_backward"
  std::string row;          // "1".."15" (bug-zoo.md) or "S1".."S5" (the source-reading rows)
  bool injected = false;    // an injected defect rather than a released version's behaviour
  std::string upstream;     // the upstream reference the switch cites
};

// The switches to blame for `scenario` failing under its own profile (empty: none alone explains
// it, or it does not fail). Runs the scenario once per deviation from strict; `failing_run`, when
// the caller already ran the scenario and saw it fail, saves the run under its own profile.
// `only_row` (non-empty): flip only the switches the zoo table can name that row for, so the blames
// name that row exactly when the full blame would (hunting one row: `fuzz --until-row`).
std::vector<Blame> blame(const Scenario& scenario, const RunRecord* failing_run = nullptr,
                         const std::string& only_row = "");

// "row 5 (post_forward_reshards_during_backward)", or "unattributed".
std::string describe(const std::vector<Blame>& blames);

}  // namespace shardfuzz::harness::zoo
