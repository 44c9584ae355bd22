// What runs a campaign and where it writes, around what it was asked (its plan, plan.h).
#pragma once

#include "fuzz/campaign/state.h"
#include "harness/backends/backend.h"
#include "harness/backends/threads/threads_backend.h"
#include "harness/differential/differential.h"

#include <memory>
#include <optional>
#include <string>

namespace shardfuzz::fuzz {

// What runs the campaign and where it writes; what it does is its CampaignPlan (plan.h), the part
// a resume reads back.
struct CampaignOptions : CampaignPlan {
  std::string out_dir = "findings";
  // What runs each case. Blame always runs the native runtime: a finding on torch that no native
  // profile reproduces is unattributed (a divergence to explain).
  std::shared_ptr<harness::Backend> backend = harness::make_threads_backend();
  // Differential campaigns (CampaignPlan::differential): the two sides. `backend` is its torch side.
  std::shared_ptr<harness::differential::Differential> torch_and_native;
  std::shared_ptr<harness::Backend> native;  // what torch_and_native runs natively; kept alive here
  // Continue this saved campaign (its plan replaces the one above).
  std::optional<CampaignState> resume;
};

}  // namespace shardfuzz::fuzz
