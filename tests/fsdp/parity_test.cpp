// Parity: after 3 steps, losses and every local shard equal the unsharded single-rank reference
// (same seed, every rank's batch, loss averaged over ranks) within 1e-5 relative — world 1-4,
// nested experts groups and HSDP experts, AC off / non-reentrant / reentrant, SGD and AdamW.
#include "harness/model/model_builder.h"
#include "harness/backends/threads/threads_backend.h"
#include "runtime/nn/model.h"
#include "runtime/train/reference.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>

namespace shardfuzz::harness {
namespace {

struct ParityCase {
  int world;
  ac::CheckpointMode ac;
  bool nested;
  int expert_shard_size;
  train::OptimizerConfig::Kind optimizer;
  int reshard_ranks = 0;  // int reshard_after_forward on blocks and experts
};

std::string case_name(const ::testing::TestParamInfo<ParityCase>& info) {
  const ParityCase& c = info.param;
  return "w" + std::to_string(c.world) + "_" + ac::to_string(c.ac) + (c.nested ? "_nested" : "_flat") +
         (c.expert_shard_size ? "_hsdp" + std::to_string(c.expert_shard_size) : "") +
         (c.optimizer == train::OptimizerConfig::Kind::AdamW ? "_adamw" : "_sgd") +
         (c.reshard_ranks ? "_raf" + std::to_string(c.reshard_ranks) : "");
}

class Parity : public ::testing::TestWithParam<ParityCase> {};

TEST_P(Parity, MatchesUnshardedReferenceAfterThreeSteps) {
  const ParityCase& c = GetParam();
  Scenario sc;
  sc.world_size = c.world;
  sc.dims = {6, 5, 3, 5};  // odd sizes: 6 rows over 4 ranks pads (2, 2, 2, 0)
  sc.steps = 3;
  sc.seed = 7;
  sc.expert_shard_size = c.expert_shard_size;
  BlockSpec block;
  block.ac = c.ac;
  sc.blocks.assign(2, block);
  ShardSpec spec;
  if (c.reshard_ranks) spec.reshard_after_forward = fsdp::ReshardAfterForward::ranks(c.reshard_ranks);
  ShardSpec experts = spec;
  if (c.expert_shard_size) {
    experts.mesh = "experts";
    if (c.reshard_ranks) experts.reshard_after_forward = fsdp::ReshardAfterForward::yes();
  }
  for (int i = 0; i < 2; ++i) {
    if (c.nested) sc.fully_shard["layers." + std::to_string(i) + ".moe.experts"] = experts;
    sc.fully_shard["layers." + std::to_string(i)] = spec;
  }
  sc.fully_shard["out"] = ShardSpec{};
  sc.fully_shard[""] = ShardSpec{};
  train::OptimizerConfig opt;
  opt.kind = c.optimizer;
  opt.lr = c.optimizer == train::OptimizerConfig::Kind::AdamW ? 0.01 : 0.05;
  opt.weight_decay = 0.01;
  sc.optimizer = opt;

  RunRecord run = run_threads(sc);
  ASSERT_TRUE(run.ok()) << run.error;

  BuildOptions as_reference;  // the scenario's mathematics: no checkpointing (LibTorch's formulas differentiate it)
  as_reference.reference = true;
  auto reference = build_model(sc, as_reference);
  auto input = [&](int rank, int step) { return train::make_input(sc.seed, rank, step, sc.dims.tokens, sc.dims.dim, true); };
  train::ReferenceRun ref = train::run_reference(*reference, c.world, sc.steps, input, loss_fn(sc), opt);
  std::map<std::string, at::Tensor> full;
  for (auto& [fqn, p] : reference->named_parameters()) full[fqn] = p->detach();

  for (const RankRecord& rank : run.ranks) {
    // Teardown returns the rank's allocator bytes to where they were before the model existed.
    EXPECT_EQ(rank.teardown_bytes, rank.baseline_bytes) << "rank " << rank.rank;
    ASSERT_EQ(rank.losses.size(), 3u);
    for (int s = 0; s < 3; ++s)
      EXPECT_NEAR(rank.losses[s], ref.losses[s][rank.rank], 1e-5 * std::max(1.0, std::abs(ref.losses[s][rank.rank])))
          << "rank " << rank.rank << " step " << s;
    ASSERT_EQ(rank.shards.size(), full.size());
    for (const ShardRecord& shard : rank.shards) {
      ASSERT_TRUE(full.count(shard.fqn)) << shard.fqn;
      at::Tensor whole = full[shard.fqn];
      const int64_t n = whole.size(shard.shard_dim);
      const int64_t chunk = (n + shard.shard_size - 1) / shard.shard_size;
      const int64_t begin = std::min(chunk * shard.shard_rank, n);
      at::Tensor expected = whole.narrow(shard.shard_dim, begin, std::min(chunk, n - begin));
      ASSERT_EQ(expected.sizes(), shard.local.sizes()) << shard.fqn << " on rank " << rank.rank;
      EXPECT_TRUE(at::allclose(shard.local, expected, 1e-5, 1e-6))
          << shard.fqn << " on rank " << rank.rank << ": max abs diff "
          << (shard.local - expected).abs().max().item<double>();
    }
  }
}

using K = train::OptimizerConfig::Kind;
using M = ac::CheckpointMode;
INSTANTIATE_TEST_SUITE_P(
    Worlds, Parity,
    ::testing::Values(ParityCase{1, M::None, true, 0, K::Sgd}, ParityCase{2, M::None, true, 0, K::Sgd},
                      ParityCase{3, M::None, true, 0, K::AdamW}, ParityCase{4, M::None, true, 0, K::Sgd},
                      ParityCase{1, M::NonReentrant, true, 0, K::AdamW}, ParityCase{2, M::NonReentrant, true, 0, K::Sgd},
                      ParityCase{3, M::NonReentrant, false, 0, K::Sgd}, ParityCase{4, M::NonReentrant, true, 0, K::AdamW},
                      ParityCase{2, M::Reentrant, true, 0, K::Sgd}, ParityCase{3, M::Reentrant, true, 0, K::AdamW},
                      ParityCase{4, M::Reentrant, false, 0, K::Sgd}, ParityCase{4, M::NonReentrant, true, 2, K::Sgd},
                      ParityCase{4, M::None, true, 2, K::AdamW}, ParityCase{4, M::NonReentrant, true, 0, K::Sgd, 2},
                      ParityCase{4, M::None, true, 0, K::AdamW, 2}, ParityCase{2, M::Reentrant, true, 0, K::Sgd, 1},
                      ParityCase{4, M::Reentrant, true, 0, K::Sgd, 4}),
    case_name);

}  // namespace
}  // namespace shardfuzz::harness

namespace shardfuzz::harness {
namespace {

// int reshard_after_forward=2 on world 4: after forward the block keeps a 1/2 slice
// (SHARDED_POST_FORWARD, in the ledger), is not unsharded, and backward re-gathers it.
TEST(ReshardAfterForwardInt, KeepsAHalfSliceAfterForward) {
  Scenario sc;
  sc.world_size = 4;
  sc.steps = 1;
  sc.blocks.assign(2, BlockSpec{});
  ShardSpec half;
  half.reshard_after_forward = fsdp::ReshardAfterForward::ranks(2);
  sc.fully_shard = {{"layers.0", half}, {"layers.1", half}, {"", ShardSpec{}}};
  RunRecord run = run_threads(sc);
  ASSERT_TRUE(run.ok()) << run.error;
  bool seen = false;
  for (const auto& e : run.ranks[0].events_of_step(0))
    if (e.event == memory::Event::PostForward && e.group == "layers.0") {
      seen = true;
      EXPECT_GT(e.ledger[static_cast<int>(memory::BufferKind::ShardedPostForward)], 0);
      EXPECT_EQ(std::count(e.unsharded.begin(), e.unsharded.end(), "layers.0"), 0);
    }
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace shardfuzz::harness
