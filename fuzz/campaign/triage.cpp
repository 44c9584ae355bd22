// Triage of a checked case and of a shrunk finding.
#include "fuzz/campaign/triage.h"

#include <algorithm>

namespace shardfuzz::fuzz {

bool blamed_on(const std::vector<harness::zoo::Blame>& blames, const std::string& row) {
  return std::any_of(blames.begin(), blames.end(), [&](const harness::zoo::Blame& b) { return b.row == row; });
}

Triage::Case Triage::of_case(const harness::Scenario& scenario, const CaseCheck& check) {
  if (!check.property) return Case::Passes;
  if (!plan_.until_row.empty() && !blamed_on(runner_.blame(scenario, &check, plan_.until_row), plan_.until_row))
    return Case::NotTheHuntedRow;
  if (check.differential && !shrunk_.insert(*check.failure()).second) return Case::Repeat;
  return Case::Shrink;
}

Triage::Finding Triage::of_finding(const fuzz::Finding& f) const {
  if (!plan_.until_row.empty() && f.zoo != plan_.until_row) return Finding::PassedOver;
  if (plan_.keep_going) return Finding::Kept;
  using Kind = harness::differential::Attribution::Kind;
  return f.attribution == Kind::PropertyFailedOnBoth ? Finding::Kept : Finding::KeptAndEnds;
}

}  // namespace shardfuzz::fuzz
