// A failing case's way to a finding: shrunk (keeping the failure, and the hunted row when there is
// one), on isolated workers side by side when the plan allows, then blamed (a bug-zoo row, or a
// differential divergence's attribution) and written as a reproducer with its HTML report.
#pragma once

#include "fuzz/campaign/case_runner.h"
#include "fuzz/campaign/finding.h"
#include "fuzz/campaign/options.h"

#include <functional>
#include <optional>
#include <ostream>
#include <string>

namespace shardfuzz::fuzz {

// "3 block(s) (1 checkpointed), 4 fully_shard group(s) (2 nested inside blocks), world 2, ..."
std::string describe(const harness::Scenario& s);

// The finding case k makes; nullopt when `overtaken` (asked before every shrink step) says the
// campaign must stop before k (a --jobs shard past another's lower failing case: a campaign of one
// job would have stopped before it, so its shrink is dropped).
std::optional<Finding> shrink_case(const CampaignOptions& options, harness::Backend& backend, CaseRunner& runner,
                                   const rc::Shrinkable<harness::Scenario>& drawn, const CaseCheck& failing, int k,
                                   const std::function<bool()>& overtaken, std::ostream& out);

}  // namespace shardfuzz::fuzz
