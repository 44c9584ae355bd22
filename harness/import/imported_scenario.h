// The scenario an imported model runs as: the real structure (every layer, dense or MoE, the FSDP
// tree and its meshes, torchtitan's explicit prefetch lists under EP, the AC mode, the world),
// either at the real widths the scenario schema holds (model width, the experts' or MLP's inner
// width, experts, top-k, vocabulary, local batch x sequence tokens, the recipe's dtypes) — as a
// shape-only run on the meta device when a run with data could not hold it, which at production
// sizes is always — or at small widths (a quick schedule, and a scenario that shrinks in seconds).
// FSDP's schedule — which group is unsharded, pending or stale at every event — depends on the
// structure, not on the widths; the projection (projection.h) prices each event with the plan's
// exact bytes (GQA, SwiGLU and shared experts, which the schema's blocks approximate). What the
// scenario names "out" is the plan's norm+out group (a scenario's fully_shard holds one module; the
// final norm's few bytes stay in the root).
#pragma once

#include "harness/import/fsdp_plan.h"
#include "harness/scenario/scenario.h"

#include <map>
#include <string>

namespace shardfuzz::harness::import {

enum class Widths { Real, Small };

struct ImportedScenario {
  Scenario scenario;
  std::map<std::string, std::string> plan_group;  // scenario group path -> FsdpPlan group path
  std::string execution;  // how it runs and why, one line ("shape-only: ...", "with data at real widths", ...)
};

// Throws std::invalid_argument naming what the scenario schema cannot hold (more than
// ScenarioLimits::kMaxBlocks layers, a world over kMaxWorld). `shape_only` forces a shape-only run
// at real widths; otherwise one is chosen when a run with data would not fit. A shape-only run
// routes by `routing_skew` (nn::RoutingAssumption: global expert e receives a share 1/(e+1)^skew),
// and `execution` states it.
ImportedScenario imported_scenario(const ModelShape& m, const Recipe& recipe, const FsdpPlan& plan, const std::string& profile,
                                   Widths widths = Widths::Small, bool shape_only = false, double routing_skew = 0.0);

}  // namespace shardfuzz::harness::import
