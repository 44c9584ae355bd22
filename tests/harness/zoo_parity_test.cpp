// Parity with the unsharded reference for every model of the zoo, world 1-8, under strict: token
// embedding, attention with pre-norms, dense MLP, routed top-k MoE (expert parallel over the
// dp_mod_ep x ep mesh where the world allows it), the traces' gated MoE, a final norm, LoRA
// adapters on every linear of every block (bases frozen; cf. bug zoo row 14), frozen prefix
// blocks, AC in every mode, micro-batches, several forwards per backward, and each precision: a
// float32 or bfloat16 model, with or without a MixedPrecisionPolicy (bfloat16 compute, float32 or
// bfloat16 reduction, accelerate's float32 masters for trainable parameters). Every property must
// pass, and every LoRA adapter must both match the reference and have moved from its init (a
// parity of two untouched tensors would prove nothing).
#include "harness/model/model_builder.h"
#include "harness/properties/property.h"
#include "harness/backends/threads/threads_backend.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>

namespace shardfuzz::harness {
namespace {

struct ZooCase {
  int world;
  int expert_shard_size;  // > 0 with EP: ep = world / expert_shard_size
  ac::CheckpointMode ac;
  int micro_batches;
  int forwards_per_backward;
  bool frozen_prefix;
  // fp32; bf16 (a bfloat16 model, no policy); mp (float32 model, param bf16, reduce fp32);
  // mp_bf16_reduce (bfloat16 model, reduce in bf16); mp_upcast (bfloat16 model, float32 masters).
  std::string precision = "fp32";
};

std::string name_of(const ZooCase& c) {
  return "w" + std::to_string(c.world) + "_ess" + std::to_string(c.expert_shard_size) + "_" + ac::to_string(c.ac) +
         "_mb" + std::to_string(c.micro_batches) + "_fpb" + std::to_string(c.forwards_per_backward) +
         (c.frozen_prefix ? "_frozen0" : "") + (c.precision == "fp32" ? "" : "_" + c.precision);
}

Scenario zoo_scenario(const ZooCase& c) {
  Scenario sc;
  sc.name = "zoo " + name_of(c);
  sc.seed = 1234;
  sc.world_size = c.world;
  sc.profile = semantics::Profile::named("strict");
  sc.steps = 2;
  sc.dims.dim = 8;
  sc.dims.hidden = 8;
  sc.dims.experts = 4;
  sc.dims.tokens = 6;
  sc.dims.heads = 2;
  sc.dims.top_k = 2;
  sc.dims.vocab = 16;
  sc.dims.lora_rank = 2;
  sc.embed = true;
  sc.final_norm = true;
  sc.micro_batches = c.micro_batches;
  sc.forwards_per_backward = c.forwards_per_backward;
  sc.expert_shard_size = c.expert_shard_size;
  sc.expert_parallel = c.expert_shard_size > 0 && c.world / c.expert_shard_size > 1;
  if (c.precision != "fp32") sc.dtype = c.precision == "mp" ? "float32" : "bfloat16";
  if (c.precision.rfind("mp", 0) == 0) {
    sc.mixed_precision = MixedPrecisionSpec{};
    if (c.precision == "mp_bf16_reduce") sc.mixed_precision->reduce_dtype.reset();
    sc.mixed_precision->upcast_trainable = c.precision == "mp_upcast";
  }
  // Without float32 masters an update under half a bfloat16 ulp of the weight is lost (as on any
  // bfloat16 model): a larger step lets every adapter move.
  if (sc.stored_dtype(true) == c10::ScalarType::BFloat16) sc.optimizer.lr = 0.5;

  BlockSpec attention_mlp;
  attention_mlp.kind = BlockSpec::Kind::Mlp;
  attention_mlp.attention = true;
  attention_mlp.norm = true;
  attention_mlp.ac = c.ac;
  BlockSpec routed;
  routed.kind = BlockSpec::Kind::RoutedMoe;
  routed.norm = true;
  routed.ac = c.ac;
  BlockSpec gated;
  gated.kind = BlockSpec::Kind::Moe;
  gated.gated = true;
  gated.ac = c.ac;
  sc.blocks = {attention_mlp, routed, gated, attention_mlp};
  for (BlockSpec& b : sc.blocks) b.lora = b.linear_paths();  // adapters on every linear
  if (c.frozen_prefix) {
    sc.blocks[0].frozen = true;
    sc.blocks[0].lora.clear();  // a fully frozen prefix block: adapters behind it
  }

  ShardSpec dense;
  ShardSpec experts;
  experts.mesh = c.expert_shard_size > 0 ? "experts" : "dp";
  // torchtitan: Shard(1) when dp_mod_ep x ep exceeds the experts.
  const int dp_mod_ep = c.expert_shard_size > 0 ? c.expert_shard_size : c.world;
  if (sc.expert_parallel && dp_mod_ep * (c.world / dp_mod_ep) > sc.dims.experts && sc.dims.dim % dp_mod_ep == 0 &&
      sc.dims.hidden % dp_mod_ep == 0)
    experts.shard_dim = 1;
  for (std::size_t i = 0; i < sc.blocks.size(); ++i) {
    const std::string block = "layers." + std::to_string(i);
    sc.fully_shard[block] = dense;
    // Under EP only routed experts are EP-local; the dense MoE's experts stay on the world.
    if (sc.blocks[i].kind == BlockSpec::Kind::RoutedMoe) sc.fully_shard[block + ".moe.experts"] = experts;
    if (sc.blocks[i].kind == BlockSpec::Kind::Moe) sc.fully_shard[block + ".moe.experts"] = sc.expert_parallel ? dense : experts;
  }
  sc.fully_shard["embed"] = dense;
  sc.fully_shard["out"] = dense;
  sc.fully_shard[""] = dense;
  return sc;
}

class ZooParity : public ::testing::TestWithParam<ZooCase> {};

TEST_P(ZooParity, EveryPropertyPassesAndEveryAdapterMovesWithTheReference) {
  const Scenario sc = zoo_scenario(GetParam());
  ASSERT_NO_THROW(sc.validate());
  const RunRecord run = run_threads(sc);
  ASSERT_TRUE(run.ok()) << run.error;
  for (const Verdict& v : check_properties(sc, run)) EXPECT_TRUE(v.ok) << v.property << ": " << v.message;

  // Every adapter of every block is in some rank's shards, and moved from its initial value.
  auto initial = build_model(sc, BuildOptions{true, nullptr});
  std::map<std::string, at::Tensor> init;
  for (auto& [fqn, p] : initial->named_parameters()) init[fqn] = p->detach();
  std::map<std::string, double> moved;  // fqn -> largest change on any rank's shard
  for (const RankRecord& r : run.ranks)
    for (const ShardRecord& s : r.shards) {
      if (s.fqn.find("lora_") == std::string::npos) continue;
      const at::Tensor& whole = init.at(s.fqn);
      const int64_t n = whole.size(s.shard_dim);
      const int64_t chunk = (n + s.shard_size - 1) / s.shard_size;
      const int64_t begin = std::min(chunk * s.shard_rank, n);
      at::Tensor start = whole.narrow(s.shard_dim, begin, std::min(chunk, n - begin));
      const double change = start.numel() ? (s.local - start).abs().max().item<double>() : 0.0;
      moved[s.fqn] = std::max(moved[s.fqn], change);
    }
  int adapters = 0;
  for (const auto& [fqn, t] : init)
    if (fqn.find("lora_") != std::string::npos) {
      ++adapters;
      ASSERT_TRUE(moved.count(fqn)) << fqn << " is in no rank's shards";
      EXPECT_GT(moved[fqn], 1e-6) << fqn << " never received a gradient";
      EXPECT_EQ(init.at(fqn).scalar_type(), sc.stored_dtype(true)) << fqn;
    }
  EXPECT_GE(adapters, 2 * 9) << "adapters on every linear of the thawed blocks";
}

INSTANTIATE_TEST_SUITE_P(
    Worlds, ZooParity,
    ::testing::Values(ZooCase{1, 0, ac::CheckpointMode::None, 1, 1, false},
                      ZooCase{2, 1, ac::CheckpointMode::NonReentrant, 1, 1, false},  // EP 2
                      ZooCase{2, 0, ac::CheckpointMode::Reentrant, 2, 1, true},
                      ZooCase{3, 0, ac::CheckpointMode::SelectiveOps, 1, 2, false},
                      ZooCase{4, 2, ac::CheckpointMode::Reentrant, 1, 1, true},     // EP 2 x dp_mod_ep 2
                      ZooCase{4, 1, ac::CheckpointMode::None, 2, 2, false},         // EP 4
                      ZooCase{6, 3, ac::CheckpointMode::NonReentrant, 1, 1, false},  // EP 2 x dp_mod_ep 3
                      ZooCase{8, 2, ac::CheckpointMode::SelectiveOps, 2, 1, true},   // EP 4 x dp_mod_ep 2, Shard(1)
                      ZooCase{8, 0, ac::CheckpointMode::NonReentrant, 1, 1, false},
                      ZooCase{1, 0, ac::CheckpointMode::NonReentrant, 1, 1, true, "bf16"},
                      ZooCase{2, 1, ac::CheckpointMode::Reentrant, 2, 1, false, "mp"},            // EP 2
                      ZooCase{4, 2, ac::CheckpointMode::NonReentrant, 1, 1, true, "mp_upcast"},   // EP 2 x 2
                      ZooCase{4, 0, ac::CheckpointMode::SelectiveOps, 1, 2, false, "mp_bf16_reduce"},
                      ZooCase{8, 2, ac::CheckpointMode::None, 2, 1, true, "mp"}),
    [](const ::testing::TestParamInfo<ZooCase>& info) { return name_of(info.param); });

}  // namespace
}  // namespace shardfuzz::harness
