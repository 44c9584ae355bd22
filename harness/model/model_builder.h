// Builds a Scenario's model and applies its fully_shard placements: children before parents (as
// upstream requires), each with its options and mesh, then the explicit prefetch lists.
#pragma once

#include "harness/scenario/scenario.h"
#include "runtime/comm/communicator.h"
#include "runtime/fsdp/rank_runtime.h"
#include "runtime/mesh/device_mesh.h"
#include "runtime/nn/model.h"
#include "runtime/train/reference.h"
#include "runtime/train/step.h"

#include <memory>

namespace shardfuzz::harness {

// The scenario's loss over the model's output.
train::LossFn loss_fn(const Scenario& scenario);

// The batch of `rank` at `step`, micro-batch `micro`, forward `forward` (or the one shared input
// when !input_per_rank): token ids when the model embeds, else [tokens, dim] floats. For the
// sharded run and the reference alike.
at::Tensor input_of(const Scenario& scenario, int rank, int step, int micro = 0, int forward = 0,
                    c10::Device device = c10::Device(c10::DeviceType::CPU));
train::StepPlan step_plan(const Scenario& scenario);

struct BuildOptions {
  // The unsharded reference: the scenario's mathematics only — no checkpointing (it must not
  // change the result), every expert local, no injected defect.
  bool reference = false;
  std::shared_ptr<comm::Communicator> ep;  // the expert-parallel group (expert_parallel runs)
  // Where the parameters live. They are drawn on the CPU first, so every device starts from the
  // same weights.
  c10::Device device = c10::Device(c10::DeviceType::CPU);
};

// The model, with checkpoint modes, no_grad blocks, frozen parameters and LoRA adapters applied,
// and the profile's model-level switches (reentrant checkpoint semantics, injected defects).
std::unique_ptr<nn::Model> build_model(const Scenario& scenario, const BuildOptions& options = {});

// `experts_mesh` serves placements whose mesh is "experts" (2-D means HSDP).
void apply_fully_shard(nn::Model& model, const Scenario& scenario, const mesh::DeviceMesh& dense_mesh,
                       const mesh::DeviceMesh& experts_mesh, fsdp::RankRuntime& runtime);

}  // namespace shardfuzz::harness
