// What a scenario exercises, by name: the features a campaign's summary counts, so a reader sees
// that expert parallelism, HSDP, mixed precision, LoRA, frozen blocks, gradient accumulation and
// modules run twice per backward were drawn (and how often), not only that cases passed.
#pragma once

#include "harness/scenario/scenario.h"

#include <string>
#include <vector>

namespace shardfuzz::harness {

// The features `s` exercises, in a fixed order (the names in scenario_feature_names()), and its
// world as "world_N".
std::vector<std::string> features_of(const Scenario& s);

// Every feature name features_of() can return, but the world sizes.
const std::vector<std::string>& scenario_feature_names();

}  // namespace shardfuzz::harness
