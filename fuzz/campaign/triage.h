// What a checked case is to the campaign, typed: passing; failing but not the bug-zoo row being
// hunted; a repeat of a divergence this session already shrank (differential campaigns); or a
// failure to shrink. And once shrunk, what the finding does: kept, kept and the end of the campaign
// (without --keep-going), or passed over (the minimal case moved to another row than the hunted one).
#pragma once

#include "fuzz/campaign/case_runner.h"
#include "fuzz/campaign/finding.h"
#include "fuzz/campaign/plan.h"

#include <set>
#include <string>
#include <vector>

namespace shardfuzz::fuzz {

// Whether `row` is among the rows blamed.
bool blamed_on(const std::vector<harness::zoo::Blame>& blames, const std::string& row);

class Triage {
 public:
  enum class Case { Passes, NotTheHuntedRow, Repeat, Shrink };
  enum class Finding { Kept, KeptAndEnds, PassedOver };

  // `runner` blames a hunt's failing cases; both must outlive this.
  Triage(const CampaignPlan& plan, CaseRunner& runner) : plan_(plan), runner_(runner) {}

  // Hunting one row: the drawn case is blamed first (a few runs) and only candidates for the row
  // are shrunk. A differential campaign that goes on after a finding shrinks each failure
  // (property and divergence identity) once: every shrink step runs torch too, and a torch that
  // changed makes most cases fail the same way.
  Case of_case(const harness::Scenario& scenario, const CaseCheck& check);
  // The minimal case is blamed again, since shrinking can move it to another row. Without
  // --keep-going a campaign ends at its first finding, except that a differential campaign ends at
  // its first divergence: a property that fails on both torch and the native model is a bug of the
  // torch installed (written and counted), not an answer to whether the model still holds.
  Finding of_finding(const fuzz::Finding& f) const;

 private:
  const CampaignPlan& plan_;
  CaseRunner& runner_;
  std::set<std::string> shrunk_;  // differential failures shrunk this session
};

}  // namespace shardfuzz::fuzz
