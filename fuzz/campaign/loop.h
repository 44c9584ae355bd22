// The campaign loop, in one obvious place: for each case of this shard until the session is over,
// draw it from the source, run it, triage it, shrink a failure into a finding, and tell the sinks.
// It knows nothing of fork mode, files or databases: those are sinks (fuzz/campaign/sink.h).
#pragma once

#include "fuzz/campaign/case_runner.h"
#include "fuzz/campaign/finding.h"
#include "fuzz/campaign/options.h"
#include "fuzz/campaign/session.h"
#include "fuzz/campaign/sink.h"
#include "fuzz/campaign/source.h"

#include <ostream>
#include <vector>

namespace shardfuzz::fuzz {

struct LoopParts {
  CaseSource& source;
  CaseRunner& runner;
  Session& session;                  // the clock and the saved state (also among the sinks)
  std::vector<CampaignSink*> sinks;  // told in order
};

// Runs the cases from session.next_case() on; every sink's on_end has been called on the result.
CampaignResult run_loop(const CampaignOptions& options, LoopParts& parts, std::ostream& out);

}  // namespace shardfuzz::fuzz
