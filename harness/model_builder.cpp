// Model construction and wrapping for a Scenario.
#include "harness/model_builder.h"

#include "runtime/fsdp/fully_shard.h"

#include <algorithm>
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

}  // namespace

train::LossFn loss_fn(const Scenario& sc) { return sc.loss == "sum" ? nn::sum_loss : nn::mean_loss; }

at::Tensor input_of(const Scenario& sc, int rank, int step) {
  return sc.input_per_rank
             ? train::make_input(sc.seed, rank, step, sc.dims.tokens, sc.dims.dim, sc.input_requires_grad)
             : train::make_input(sc.seed, 0, 0, sc.dims.tokens, sc.dims.dim, sc.input_requires_grad);
}

std::unique_ptr<nn::Model> build_model(const Scenario& sc) {
  nn::ModelConfig cfg;
  cfg.dim = sc.dims.dim;
  cfg.experts = sc.dims.experts;
  cfg.hidden = sc.dims.hidden;
  cfg.seed = sc.seed;
  for (const BlockSpec& b : sc.blocks) cfg.layers.push_back({b.kind == BlockSpec::Kind::Moe, b.gated});
  cfg.blocks = static_cast<int>(sc.blocks.size());
  auto model = std::make_unique<nn::Model>(cfg);
  for (std::size_t i = 0; i < sc.blocks.size(); ++i) {
    nn::Block& block = model->block(static_cast<int>(i));
    block.set_checkpoint_mode(sc.blocks[i].ac);
    if (sc.blocks[i].frozen) block.set_requires_grad(false);
  }
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
