// Builds a Scenario's model and applies its fully_shard placements: children before parents (as
// upstream requires), each with its options and mesh, then the explicit prefetch lists.
#pragma once

#include "harness/scenario.h"
#include "runtime/fsdp/rank_runtime.h"
#include "runtime/mesh/device_mesh.h"
#include "runtime/nn/model.h"
#include "runtime/train/step.h"

#include <memory>

namespace shardfuzz::harness {

// The scenario's loss over the model's output.
train::LossFn loss_fn(const Scenario& scenario);

// The batch of `rank` at `step` (or the one shared input when !input_per_rank), for the sharded
// run and the reference alike.
at::Tensor input_of(const Scenario& scenario, int rank, int step);

// The unsharded model, with checkpoint modes and frozen parameters applied.
std::unique_ptr<nn::Model> build_model(const Scenario& scenario);

// `experts_mesh` serves placements whose mesh is "experts" (2-D means HSDP).
void apply_fully_shard(nn::Model& model, const Scenario& scenario, const mesh::DeviceMesh& dense_mesh,
                       const mesh::DeviceMesh& experts_mesh, fsdp::RankRuntime& runtime);

}  // namespace shardfuzz::harness
