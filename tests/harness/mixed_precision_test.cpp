// Mixed precision end to end on the threads backend: what each dtype is, what each buffer costs in
// the ledger, the HSDP reduce output that torch <= 2.11 keeps per layer (bug zoo row 7) against
// strict's one-at-a-time, and the upcast of frozen parameters (row 13).
#include "harness/properties/property.h"
#include "harness/backends/threads/threads_backend.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace shardfuzz::harness {
namespace {

// n gated MoE blocks whose experts are fully_shard-ed on the HSDP experts mesh (replicate
// world / 2 x shard 2), blocks and head on the world.
Scenario hsdp_scenario(const std::string& profile, int blocks, const std::string& dtype,
                       std::optional<MixedPrecisionSpec> mp) {
  Scenario sc;
  sc.name = "mixed precision " + profile;
  sc.seed = 7;
  sc.world_size = 4;
  sc.expert_shard_size = 2;
  sc.profile = semantics::Profile::named(profile);
  sc.steps = 1;
  sc.dims.dim = 16;
  sc.dims.hidden = 16;
  sc.dims.experts = 2;
  sc.dims.tokens = 8;
  sc.dtype = dtype;
  sc.mixed_precision = mp;
  for (int i = 0; i < blocks; ++i) {
    sc.blocks.push_back(BlockSpec{});
    const std::string b = "layers." + std::to_string(i);
    sc.fully_shard[b] = ShardSpec{};
    ShardSpec experts;
    experts.mesh = "experts";
    sc.fully_shard[b + ".moe.experts"] = experts;
  }
  sc.fully_shard["out"] = ShardSpec{};
  sc.fully_shard[""] = ShardSpec{};
  return sc;
}

MixedPrecisionSpec bf16_compute_fp32_reduce() { return MixedPrecisionSpec{"bfloat16", "float32", false}; }

// The largest number of groups holding an HSDP reduce output at any post_backward, and the bytes
// layers.0's experts' output takes.
std::pair<std::size_t, int64_t> kept_reduce_outputs(const RunRecord& run) {
  std::size_t most = 0;
  int64_t experts = 0;
  for (const auto& e : run.ranks[0].timeline) {
    if (e.event != memory::Event::PostBackward) continue;
    most = std::max(most, e.all_reduce_input_bytes.size());
    if (e.all_reduce_input_bytes.count("layers.0.moe.experts")) experts = e.all_reduce_input_bytes.at("layers.0.moe.experts");
  }
  return {most, experts};
}

// Sum over a group's parameters on rank 0 of `bytes_of(shard)`.
template <class F>
int64_t group_sum(const RunRecord& run, const std::string& group, F bytes_of) {
  int64_t sum = 0;
  for (const ShardRecord& s : run.ranks[0].shards)
    if (s.group == group) sum += bytes_of(s);
  return sum;
}

TEST(MixedPrecision, HsdpReduceOutputsPileUpPerLayerUnderTorch211AndOneLivesUnderStrict) {
  for (int blocks : {1, 2, 4}) {
    const Scenario old = hsdp_scenario("torch-2.11", blocks, "bfloat16", bf16_compute_fp32_reduce());
    const RunRecord a = run_threads(old);
    ASSERT_TRUE(a.ok()) << a.error;
    const auto [held, bytes] = kept_reduce_outputs(a);
    EXPECT_EQ(held, static_cast<std::size_t>(blocks)) << "one float32 reduce output per HSDP layer";
    // The experts' padded bfloat16 shard of this rank, reduced in float32: twice its bytes.
    EXPECT_EQ(bytes, 2 * group_sum(a, "layers.0.moe.experts", [](const ShardRecord& s) { return s.padded_bytes; }));
    // With one block too: the next post_backward (the block's) still sees the experts' output.
    const Verdict v = check_per_layer_return_to_baseline(old, a);
    EXPECT_FALSE(v.ok);
    EXPECT_NE(v.message.find("HSDP reduce output"), std::string::npos) << v.message;

    const Scenario fixed = hsdp_scenario("strict", blocks, "bfloat16", bf16_compute_fp32_reduce());
    const RunRecord b = run_threads(fixed);
    ASSERT_TRUE(b.ok()) << b.error;
    EXPECT_LE(kept_reduce_outputs(b).first, 1u);
    for (const Verdict& w : check_properties(fixed, b)) EXPECT_TRUE(w.ok) << w.property << ": " << w.message;
  }
}

TEST(MixedPrecision, NoReduceOutputIsKeptWhenItsDtypeIsTheParametersOwn) {
  // float32 model, bfloat16 compute, float32 reduction (torchtitan's setting): the sharded
  // gradient is the reduce output itself, nothing extra lives, even under torch-2.11.
  const Scenario sc = hsdp_scenario("torch-2.11", 2, "float32", bf16_compute_fp32_reduce());
  const RunRecord run = run_threads(sc);
  ASSERT_TRUE(run.ok()) << run.error;
  EXPECT_EQ(kept_reduce_outputs(run).first, 0u);
  for (const Verdict& v : check_properties(sc, run)) EXPECT_TRUE(v.ok) << v.property << ": " << v.message;
}

TEST(MixedPrecision, LedgerCountsUnshardedParametersInParamDtypeAndShardsInTheirOwn) {
  const Scenario sc = hsdp_scenario("strict", 1, "float32", bf16_compute_fp32_reduce());
  const RunRecord run = run_threads(sc);
  ASSERT_TRUE(run.ok()) << run.error;
  for (const ShardRecord& s : run.ranks[0].shards) {
    EXPECT_EQ(s.local.scalar_type(), at::kFloat) << s.fqn;
    // bfloat16 all-gather outputs: half the float32 bytes of the same padded elements.
    EXPECT_EQ(s.unsharded_bytes * 2, s.padded_bytes * s.shard_size) << s.fqn;
  }
  const int64_t unsharded = group_sum(run, "layers.0.moe.experts", [](const ShardRecord& s) { return s.unsharded_bytes; });
  bool seen = false;
  for (const auto& e : run.ranks[0].timeline)
    if (e.event == memory::Event::AllGatherIssued && e.group == "layers.0.moe.experts") {
      EXPECT_EQ(e.pending_all_gather_bytes.at(e.group), unsharded) << "the bfloat16 flat output";
      seen = true;
      break;
    }
  EXPECT_TRUE(seen);
}

Scenario lora_scenario(const std::string& profile) {
  Scenario sc = hsdp_scenario(profile, 2, "bfloat16", MixedPrecisionSpec{"bfloat16", "float32", true});
  sc.blocks[0].lora = {"attn", "moe.router"};
  sc.blocks[1].lora = {"attn"};
  sc.blocks[1].frozen = true;
  return sc;
}

TEST(MixedPrecision, UpcastKeepsFrozenBasesInTheModelDtypeAndTrainableOnesInFloat32) {
  const Scenario sc = lora_scenario("strict");
  const RunRecord run = run_threads(sc);
  ASSERT_TRUE(run.ok()) << run.error;
  int frozen = 0, trainable = 0;
  for (const ShardRecord& s : run.ranks[0].shards) {
    EXPECT_EQ(s.local.scalar_type(), s.requires_grad ? at::kFloat : at::kBFloat16) << s.fqn;
    (s.requires_grad ? trainable : frozen)++;
  }
  EXPECT_GT(frozen, 0);
  EXPECT_GT(trainable, 0);
  for (const Verdict& v : check_properties(sc, run)) EXPECT_TRUE(v.ok) << v.property << ": " << v.message;
}

TEST(MixedPrecision, UpcastOfFrozenParamsIsCaughtWithItsBytes) {
  const Scenario sc = lora_scenario("strict+upcast_frozen_params");
  const RunRecord run = run_threads(sc);
  ASSERT_TRUE(run.ok()) << run.error;
  const Verdict v = check_params_stored_as_planned(sc, run);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.message.find("(frozen) is stored as float32, planned bfloat16"), std::string::npos) << v.message;
  // Parity still holds: an upcast is exact, only the bytes are wrong.
  EXPECT_TRUE(check_parity_with_reference(sc, run).ok);
}

TEST(MixedPrecision, InputsAreCastByTheRootEvenWithoutParametersOfItsOwn) {
  Scenario sc = hsdp_scenario("strict", 1, "float32", bf16_compute_fp32_reduce());
  sc.world_size = 1;
  sc.expert_shard_size = 0;
  sc.fully_shard["layers.0.moe.experts"].mesh = "dp";
  // Every parameter sits in a nested group: the root's state has no group, yet must cast.
  const RunRecord run = run_threads(sc);
  ASSERT_TRUE(run.ok()) << run.error;
  for (const Verdict& v : check_properties(sc, run)) EXPECT_TRUE(v.ok) << v.property << ": " << v.message;
}

}  // namespace
}  // namespace shardfuzz::harness

namespace shardfuzz::harness {
namespace {

// Found by differential conformance against torch 2.11 (not mixed precision, but the same kind of
// end-to-end check): at a shard group of one rank, reshard_after_forward=1 (int) means False, as
// upstream's _get_post_forward_mesh_info checks 1 before the group size.
TEST(ReshardAfterForwardInt, OneMeansFalseEvenWhenTheShardGroupHasOneRank) {
  Scenario sc = hsdp_scenario("torch-2.11", 1, "float32", std::nullopt);
  sc.world_size = 1;
  sc.expert_shard_size = 0;
  sc.fully_shard["layers.0.moe.experts"].mesh = "dp";
  sc.fully_shard["layers.0"].reshard_after_forward = fsdp::ReshardAfterForward::ranks(1);
  const RunRecord run = run_threads(sc);
  ASSERT_TRUE(run.ok()) << run.error;
  bool checked = false;
  for (const auto& e : run.ranks[0].timeline)
    if (e.event == memory::Event::PostForward && e.group == "layers.0" && !e.detail.value("in_backward", false)) {
      EXPECT_NE(std::find(e.unsharded.begin(), e.unsharded.end(), "layers.0"), e.unsharded.end())
          << "layers.0 stays unsharded after forward";
      checked = true;
    }
  EXPECT_TRUE(checked);
}

}  // namespace
}  // namespace shardfuzz::harness
