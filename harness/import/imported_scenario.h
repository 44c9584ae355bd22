// The scenario an imported model runs as: the real structure (every layer, dense or MoE, the FSDP
// tree and its meshes, torchtitan's explicit prefetch lists under EP, the AC mode, the world) at
// small widths. FSDP's schedule — which group is unsharded, pending or stale at every event —
// depends on that structure, not on the widths; the projection (projection.h) prices each event
// with the plan's real bytes. What the scenario names "out" is the plan's norm+out group (a
// scenario's fully_shard holds one module; the final norm's few bytes stay in the root).
#pragma once

#include "harness/import/fsdp_plan.h"
#include "harness/scenario/scenario.h"

#include <map>
#include <string>

namespace shardfuzz::harness::import {

struct ImportedScenario {
  Scenario scenario;
  std::map<std::string, std::string> plan_group;  // scenario group path -> FsdpPlan group path
};

// Throws std::invalid_argument naming what the scenario schema cannot hold (more than
// ScenarioLimits::kMaxBlocks layers, a world over kMaxWorld).
ImportedScenario imported_scenario(const ModelShape& m, const Recipe& recipe, const FsdpPlan& plan, const std::string& profile);

}  // namespace shardfuzz::harness::import
