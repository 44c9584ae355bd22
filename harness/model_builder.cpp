// Model construction and wrapping for ModelScenario.
#include "harness/model_builder.h"

#include "runtime/fsdp/fully_shard.h"

namespace shardfuzz::harness {

std::unique_ptr<nn::Model> build_model(const ModelScenario& sc) {
  nn::ModelConfig cfg;
  cfg.blocks = sc.blocks;
  cfg.dim = sc.dim;
  cfg.experts = sc.experts;
  cfg.hidden = sc.hidden;
  cfg.moe = sc.moe;
  cfg.gated = sc.gated;
  cfg.seed = sc.seed;
  auto model = std::make_unique<nn::Model>(cfg);
  for (int i = 0; i < sc.blocks; ++i)
    if (sc.is_checkpointed(i)) model->block(i).set_checkpoint_mode(sc.ac);
  if (sc.frozen_block0 && sc.blocks > 0) model->block(0).set_requires_grad(false);
  return model;
}

void apply_fully_shard(nn::Model& model, const ModelScenario& sc, const mesh::DeviceMesh& dense_mesh,
                       const mesh::DeviceMesh& expert_mesh, fsdp::RankRuntime& rt) {
  fsdp::FullyShardOptions block_opts;
  block_opts.reshard_after_forward =
      sc.block_reshard_after_forward ? fsdp::ReshardAfterForward::yes() : fsdp::ReshardAfterForward::no();
  if (sc.block_reshard_after_forward_ranks > 0)
    block_opts.reshard_after_forward = fsdp::ReshardAfterForward::ranks(sc.block_reshard_after_forward_ranks);
  auto experts_of = [&](int i) -> nn::Module& { return model.block(i).moe()->experts(); };
  for (int i = 0; i < sc.blocks; ++i) {
    if (sc.is_nested(i)) fsdp::fully_shard(experts_of(i), expert_mesh, rt, block_opts);
    fsdp::fully_shard(model.block(i), dense_mesh, rt, block_opts);
  }
  if (sc.wrap_out) fsdp::fully_shard(model.out(), dense_mesh, rt);
  fsdp::fully_shard(model, dense_mesh, rt);

  auto state = [](nn::Module& m) { return fsdp::fsdp_state_of(m); };
  if (sc.explicit_prefetch == "torchtitan") {
    // Blocks prefetch the next block and its experts forward, the previous ones backward; the
    // experts get no list, so they keep the implicit backward path (as in torchtitan).
    for (int i = 0; i < sc.blocks; ++i) {
      if (i + 1 < sc.blocks) {
        std::vector<nn::Module*> next{&model.block(i + 1)};
        if (sc.is_nested(i + 1)) next.push_back(&experts_of(i + 1));
        state(model.block(i))->set_modules_to_forward_prefetch(next);
      }
      if (i > 0) {
        std::vector<nn::Module*> prev{&model.block(i - 1)};
        if (sc.is_nested(i - 1)) prev.push_back(&experts_of(i - 1));
        state(model.block(i))->set_modules_to_backward_prefetch(prev);
      }
    }
  } else if (sc.explicit_prefetch == "empty") {
    for (int i = 0; i < sc.blocks; ++i) state(model.block(i))->set_modules_to_backward_prefetch({});
  } else if (sc.explicit_prefetch == "self_experts") {
    for (int i = 0; i < sc.blocks; ++i)
      if (sc.is_nested(i)) state(experts_of(i))->set_modules_to_backward_prefetch({&experts_of(i)});
  }
}

}  // namespace shardfuzz::harness
