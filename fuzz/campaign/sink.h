// Who hears what a campaign does: one interface for the state saver, the findings database, the
// progress line, the coverage report, and what a --jobs parent injects into its shards. The loop
// calls every sink in order; a sink never changes what the loop does next, except the one question
// a parent may answer: whether a case is past where the campaign must stop.
#pragma once

#include "fuzz/campaign/case_runner.h"
#include "fuzz/campaign/finding.h"
#include "fuzz/campaign/options.h"

namespace shardfuzz::fuzz {

// One case, once it is done (its finding, if any, already given to on_finding).
struct CaseDone {
  int index = 0;
  uint64_t seed = 0;
  const CaseCheck& check;
};

class CampaignSink {
 public:
  virtual ~CampaignSink() = default;
  // A failing case is about to be shrunk (which takes seconds).
  virtual void on_failing_case(int /*k*/) {}
  // A finding the campaign keeps (shrunk, blamed, its reproducer written).
  virtual void on_finding(const Finding&) {}
  virtual void on_case(const CaseDone&) {}
  // The campaign ended by its limits or a finding; the sink may add to the result.
  virtual void on_end(CampaignResult&) {}
  // Whether case k (or the shrink of it) is past where the campaign must stop.
  virtual bool stops_before(int /*k*/) const { return false; }
};

}  // namespace shardfuzz::fuzz
