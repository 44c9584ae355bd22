// Shard / unshard round trip: torch.chunk padding for sizes that do not divide by the world
// (trailing ranks short or empty), Shard(1) placement, storage freed by resize on reshard, and the
// ledger following every buffer. World sizes 1-8.
#include "runtime/comm/thread_world.h"
#include "runtime/fsdp/fully_shard.h"
#include "runtime/fsdp/rank_runtime.h"
#include "runtime/memory/counting_allocator.h"
#include "runtime/nn/linear.h"
#include "runtime/nn/moe.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace shardfuzz::fsdp {
namespace {

using memory::BufferKind;

void expect_round_trip(nn::Module& module, const std::vector<at::Tensor>& originals, int world, int rank,
                       int shard_dim, RankRuntime& rt) {
  ParamGroup* g = fsdp_state_of(module)->group();
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(g->params().size(), originals.size());
  for (std::size_t i = 0; i < originals.size(); ++i) {
    const ShardedParam& p = g->params()[i];
    const at::Tensor& full = originals[i];
    const int64_t n = full.size(shard_dim);
    const int64_t chunk = (n + world - 1) / world;
    const int64_t begin = std::min<int64_t>(chunk * rank, n);
    at::Tensor expected = full.narrow(shard_dim, begin, std::min<int64_t>(chunk, n - begin));
    EXPECT_TRUE(at::equal(p.local_shard(), expected)) << p.fqn() << " rank " << rank;
    EXPECT_EQ(p.padded_sharded_numel() * world, p.unsharded_padded_numel());
    EXPECT_FALSE(p.unsharded_allocated()) << p.fqn() << ": unsharded storage must start freed";
    // Padding is zero.
    at::Tensor tail = p.sharded_data().narrow(0, expected.numel(), p.padded_sharded_numel() - expected.numel());
    EXPECT_TRUE(tail.numel() == 0 || tail.abs().sum().item<double>() == 0.0);
  }
  EXPECT_EQ(rt.ledger().bytes(g->name(), BufferKind::UnshardedParam), 0);
  g->unshard();
  EXPECT_TRUE(g->has_pending_all_gather());
  EXPECT_GT(rt.ledger().bytes(g->name(), BufferKind::PendingAllGather) +
                rt.ledger().bytes(g->name(), BufferKind::PersistentAllGather),
            0);
  g->wait_for_unshard();
  EXPECT_FALSE(g->has_pending_all_gather());
  EXPECT_EQ(rt.ledger().bytes(g->name(), BufferKind::PendingAllGather), 0);
  EXPECT_TRUE(g->is_unsharded());
  int64_t unsharded_bytes = 0;
  for (std::size_t i = 0; i < originals.size(); ++i) {
    const ShardedParam& p = g->params()[i];
    EXPECT_TRUE(at::equal(p.unsharded_param(), originals[i])) << p.fqn() << " rank " << rank;
    unsharded_bytes += p.unsharded_padded_numel() * 4;
  }
  EXPECT_EQ(rt.ledger().bytes(g->name(), BufferKind::UnshardedParam), unsharded_bytes);
  g->reshard();
  EXPECT_FALSE(g->is_unsharded());
  for (const ShardedParam& p : g->params()) {
    EXPECT_FALSE(p.unsharded_allocated()) << p.fqn();
    EXPECT_EQ(p.unsharded_param().storage().nbytes(), 0u);
  }
  EXPECT_EQ(rt.ledger().bytes(g->name(), BufferKind::UnshardedParam), 0);
}

class ShardedParamRoundTrip : public ::testing::TestWithParam<int> {};

TEST_P(ShardedParamRoundTrip, Dim0WithTorchChunkPadding) {
  const int world = GetParam();
  memory::install_counting_allocator();
  comm::ThreadWorld tw({world, std::chrono::milliseconds(10000)});
  auto outcomes = tw.run([&](std::shared_ptr<comm::Communicator> c) {
    memory::AllocationRankGuard tag(c->global_rank());
    RankRuntime rt(c->global_rank(), semantics::Profile::named("torch-2.9"));
    nn::Init init(3);
    nn::Linear lin(5, 7, init);  // weight [7, 5], bias [7]: 7 rows over up to 8 ranks
    std::vector<at::Tensor> originals{lin.param("weight").detach().clone(), lin.param("bias").detach().clone()};
    auto mesh = mesh::DeviceMesh::world_mesh(c);
    fully_shard(lin, mesh, rt);
    EXPECT_EQ(rt.ledger().bytes("root", BufferKind::ShardedParam), (((7 + world - 1) / world) * (5 + 1)) * 4);
    expect_round_trip(lin, originals, world, c->rank(), 0, rt);
  });
  comm::rethrow_root_failure(outcomes);
}

TEST_P(ShardedParamRoundTrip, Shard1WhereItDividesAndRejectsWhereItDoesNot) {
  const int world = GetParam();
  memory::install_counting_allocator();
  comm::ThreadWorld tw({world, std::chrono::milliseconds(10000)});
  auto outcomes = tw.run([&](std::shared_ptr<comm::Communicator> c) {
    memory::AllocationRankGuard tag(c->global_rank());
    RankRuntime rt(c->global_rank(), semantics::Profile::named("torch-2.11"));
    nn::Init init(5);
    nn::Experts experts(840, 2, 3, init);  // w1 [2, 840, 3] (840 divides by 1..8), w2 [2, 3, 840]
    auto mesh = mesh::DeviceMesh::world_mesh(c);
    FullyShardOptions opts;
    opts.shard_dim = 1;
    if (3 % world == 0 || world == 1) {
      std::vector<at::Tensor> originals{experts.param("w1").detach().clone(), experts.param("w2").detach().clone()};
      fully_shard(experts, mesh, rt, opts);
      expect_round_trip(experts, originals, world, c->rank(), 1, rt);
    } else {
      // w2 has 3 rows on dim 1: Shard(1) over `world` ranks must be refused, naming the parameter.
      try {
        fully_shard(experts, mesh, rt, opts);
        ADD_FAILURE() << "expected Shard(1) of w2 [2, 3, 840] over " << world << " ranks to be rejected";
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("w2"), std::string::npos) << e.what();
      }
    }
  });
  comm::rethrow_root_failure(outcomes);
}

INSTANTIATE_TEST_SUITE_P(Worlds, ShardedParamRoundTrip, ::testing::Range(1, 9),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

}  // namespace
}  // namespace shardfuzz::fsdp
