// Builds a ModelScenario's model and applies its fully_shard layout (torchtitan's order: experts,
// then blocks, then the head, then the root; explicit prefetch lists on blocks).
#pragma once

#include "harness/model_scenario.h"
#include "runtime/fsdp/rank_runtime.h"
#include "runtime/mesh/device_mesh.h"
#include "runtime/nn/model.h"

#include <memory>

namespace shardfuzz::harness {

// The unsharded model, with checkpoint modes and frozen parameters applied.
std::unique_ptr<nn::Model> build_model(const ModelScenario& scenario);

// `expert_mesh`: where nested experts are sharded (a 2-D mesh means HSDP).
void apply_fully_shard(nn::Model& model, const ModelScenario& scenario, const mesh::DeviceMesh& dense_mesh,
                       const mesh::DeviceMesh& expert_mesh, fsdp::RankRuntime& runtime);

}  // namespace shardfuzz::harness
