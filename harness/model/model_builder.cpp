// Model construction and wrapping for a Scenario.
#include "harness/model/model_builder.h"

#include "runtime/fsdp/fully_shard.h"
#include "runtime/semantics/profile.h"
#include "runtime/nn/ops.h"
#include "runtime/nn/routed_moe.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace shardfuzz::harness {
namespace {

nn::Module& module_at(nn::Model& model, const std::string& path, const std::string& where) {
  nn::Module* m = model.find(path);
  if (!m) throw std::invalid_argument(where + ": no module at '" + path + "'");
  return *m;
}

std::vector<nn::Module*> resolve(nn::Model& model, const std::vector<std::string>& paths, const std::string& self,
                                 const std::string& where) {
  std::vector<nn::Module*> out;
  for (const auto& p : paths) out.push_back(&module_at(model, p == "self" ? self : p, where));
  return out;
}

// The parameters as the scenario stores them: the model's dtype, or float32 master weights for
// those that require grad under mixed precision (accelerate's upcast; the injected
// upcast_frozen_params defect upcasts the frozen ones too). Values are drawn in float32 first, so
// every dtype sees the same rounded weights.
void store_in_planned_dtypes(nn::Model& model, const Scenario& sc, bool upcast_frozen, c10::Device device) {
  for (auto& [name, slot] : model.named_parameters()) {
    const bool trainable = slot->requires_grad();
    const bool upcast_all = upcast_frozen && sc.mixed_precision && sc.mixed_precision->upcast_trainable;
    const c10::ScalarType want = upcast_all ? c10::ScalarType::Float : sc.stored_dtype(trainable);
    const c10::ScalarType model_dtype = scalar_type_of(sc.dtype);
    if (slot->scalar_type() == want && want == model_dtype && slot->device() == device) continue;
    // Through the model's dtype first: an upcast master weight holds the value as loaded.
    at::Tensor loaded = slot->detach().to(model_dtype).to(want).to(device);
    loaded.set_requires_grad(trainable);
    *slot = loaded;
  }
}

}  // namespace

train::LossFn loss_fn(const Scenario& sc) {
  // In float32 whatever the model computes in (torchtitan's loss upcasts its input the same way).
  train::LossFn loss = sc.loss == "sum" ? nn::sum_loss : nn::mean_loss;
  return [loss](const at::Tensor& out) { return loss(nn::ops::to_dtype(out, c10::ScalarType::Float)); };
}

at::Tensor input_of(const Scenario& sc, int rank, int step, int micro, int forward, c10::Device device) {
  // Stream 0 is the first forward of the first micro-batch: the same batch as before micro-batches
  // existed, so older reproducers keep their inputs. The stride is frozen (stored reproducers'
  // inputs depend on it), apart from the validation limit it must stay above.
  constexpr int kInputStreamsPerMicroBatch = 16;
  static_assert(ScenarioLimits::kMaxForwardsPerBackward <= kInputStreamsPerMicroBatch,
                "a micro-batch's forwards would share input streams with the next micro-batch's");
  const int stream = micro * kInputStreamsPerMicroBatch + forward;
  if (!sc.input_per_rank) rank = 0, step = 0;
  if (sc.shape_only) {  // sizes only: nothing to draw
    const auto on = at::TensorOptions().device(at::kMeta);
    if (sc.embed) return at::empty({sc.dims.tokens}, on.dtype(at::kLong));
    return at::empty({sc.dims.tokens, sc.dims.dim}, on.dtype(sc.mixed_precision ? at::kFloat : sc.compute_dtype()))
        .set_requires_grad(sc.input_requires_grad);
  }
  // Drawn on the CPU, so every device sees the same batch.
  if (sc.embed) return train::make_tokens(sc.seed, rank, step, sc.dims.tokens, sc.dims.vocab, stream).to(device);
  at::Tensor x = train::make_input(sc.seed, rank, step, sc.dims.tokens, sc.dims.dim, sc.input_requires_grad, stream);
  // A low-precision model without mixed precision is fed in its dtype; under mixed precision the
  // input stays float32 and fully_shard casts it (cast_forward_inputs).
  const c10::ScalarType dtype =
      !sc.mixed_precision && x.scalar_type() != sc.compute_dtype() ? sc.compute_dtype() : x.scalar_type();
  if (dtype != x.scalar_type() || device != x.device())
    x = x.detach().to(device, dtype).set_requires_grad(sc.input_requires_grad);
  return x;
}

train::StepPlan step_plan(const Scenario& sc) { return {sc.micro_batches, sc.forwards_per_backward, sc.eval_forward}; }

std::unique_ptr<nn::Model> build_model(const Scenario& sc, const BuildOptions& options) {
  const semantics::Profile& profile = sc.profile;
  nn::ModelConfig cfg;
  cfg.dim = sc.dims.dim;
  cfg.experts = sc.dims.experts;
  cfg.hidden = sc.dims.hidden;
  cfg.seed = sc.seed;
  cfg.vocab = sc.embed ? sc.dims.vocab : 0;
  cfg.final_norm = sc.final_norm;
  cfg.shape_only = sc.shape_only.has_value();
  if (!options.reference && sc.expert_parallel) cfg.ep = options.ep;
  for (const BlockSpec& b : sc.blocks) {
    nn::BlockConfig c;
    c.moe = b.has_moe();
    c.gated = b.gated;
    c.routed = b.kind == BlockSpec::Kind::RoutedMoe;
    c.top_k = sc.dims.top_k;
    c.attention = b.attention;
    c.heads = sc.dims.heads;
    c.norm = b.norm;
    cfg.layers.push_back(c);
  }
  cfg.blocks = static_cast<int>(sc.blocks.size());
  auto model = std::make_unique<nn::Model>(cfg);
  for (std::size_t i = 0; i < sc.blocks.size(); ++i) {
    const BlockSpec& spec = sc.blocks[i];
    nn::Block& block = model->block(static_cast<int>(i));
    if (!options.reference) {
      block.set_checkpoint_mode(spec.ac);
      block.set_checkpoint_needs_input_grad(profile.reentrant_checkpoint_needs_input_grad);
      block.set_checkpoint_wraps_hooks(spec.ac_wraps_hooks);
    }
    block.set_runs_without_grad(spec.no_grad);
    if (spec.frozen) block.set_requires_grad(false);
    for (const std::string& target : spec.lora) {
      const std::string path = "layers." + std::to_string(i) + "." + target;
      auto* linear = dynamic_cast<nn::Linear*>(model->find(path));
      if (!linear) throw std::invalid_argument("blocks[" + std::to_string(i) + "].lora: no linear at '" + path + "'");
      // Each adapter draws from its own stream, so adding one never changes another's weights.
      nn::Init init(sc.seed ^ (std::hash<std::string>{}(path) * 0x9E3779B97F4A7C15ULL), sc.shape_only.has_value(),
                    /*kept_as=*/sc.seed);
      linear->enable_lora(sc.dims.lora_rank, sc.dims.lora_alpha, init);
    }
    if (nn::RoutedMoE* moe = block.routed_moe(); moe && sc.shape_only)
      moe->set_routing_assumption(nn::RoutingAssumption{sc.shape_only->routing_skew});
    if (!options.reference && profile.experts_skip_empty)
      if (nn::RoutedMoE* moe = block.routed_moe()) moe->experts().set_skip_empty_experts(true);
  }
  store_in_planned_dtypes(*model, sc, !options.reference && profile.upcast_frozen_params, options.device);
  return model;
}

void apply_fully_shard(nn::Model& model, const Scenario& sc, const mesh::DeviceMesh& dense_mesh,
                       const mesh::DeviceMesh& experts_mesh, fsdp::RankRuntime& rt) {
  // Reverse pre-order puts every child before its parent.
  std::vector<std::string> order = sc.module_paths();
  std::reverse(order.begin(), order.end());
  for (const auto& path : order) {
    auto it = sc.fully_shard.find(path);
    if (it == sc.fully_shard.end()) continue;
    const ShardSpec& spec = it->second;
    fsdp::FullyShardOptions opts;
    opts.reshard_after_forward = spec.reshard_after_forward;
    opts.shard_dim = spec.shard_dim;
    opts.mp_policy = sc.mp_policy();
    // Expert-parallel experts: their gradient already sums the tokens of their EP group, so the
    // reduction divides by the world (torchtitan's fsdp_gradient_divide_factor).
    if (sc.expert_parallel && spec.mesh == "experts") opts.gradient_divide_factor = sc.world_size;
    const std::string where = "fully_shard[\"" + path + "\"]";
    fsdp::fully_shard(module_at(model, path, where), spec.mesh == "experts" ? experts_mesh : dense_mesh, rt, opts);
  }
  for (const auto& [path, spec] : sc.fully_shard) {
    const std::string where = "fully_shard[\"" + path + "\"]";
    fsdp::FSDPState* state = fsdp::fsdp_state_of(module_at(model, path, where));
    if (spec.forward_prefetch)
      state->set_modules_to_forward_prefetch(resolve(model, *spec.forward_prefetch, path, where + ".forward_prefetch"));
    if (spec.backward_prefetch)
      state->set_modules_to_backward_prefetch(resolve(model, *spec.backward_prefetch, path, where + ".backward_prefetch"));
  }
}

}  // namespace shardfuzz::harness
