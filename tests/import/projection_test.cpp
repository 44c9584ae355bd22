// The projection of an imported model: its schedule (a shape-only run at the real widths, or a run
// with data at small widths: both give the same schedule) priced with the plan's bytes.
// Qwen3-235B-A22B's shape at 8 layers, 16 ranks, EP 8, full AC (the report's recipe).
#include "harness/backends/threads/threads_backend.h"
#include "harness/import/hf_config.h"
#include "harness/import/projection.h"
#include "harness/import/projection_report.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace shardfuzz::harness::import {
namespace {

struct Projected {
  FsdpPlan plan;
  Projection projection;
};

Projected projected(const std::string& profile, int64_t device_memory = 0, Widths widths = Widths::Real) {
  ModelShape m = read_hf_config(SHARDFUZZ_SOURCE_DIR "/tests/data/hf/qwen3-235b-a22b.json");
  m.layers = 8;
  m.layer_is_moe.resize(8);
  Recipe r;
  r.world = 16;
  r.ep = 8;
  Projected p{plan_fsdp(m, r), {}};
  const ImportedScenario imported = imported_scenario(m, r, p.plan, profile, widths);
  EXPECT_EQ(imported.scenario.shape_only.has_value(), widths == Widths::Real) << imported.execution;
  const RunRecord run = run_threads(imported.scenario);
  EXPECT_TRUE(run.ok()) << run.error;
  p.projection = project(run, imported, p.plan, m, r, device_memory);
  return p;
}

std::vector<ProjectedLayer> rank0(const Projection& p) {
  std::vector<ProjectedLayer> out;
  for (const auto& l : p.layers)
    if (l.rank == 0) out.push_back(l);
  return out;
}

// torch-2.9's post_forward during recompute: one experts all-gather (576 MiB) more stays pending
// after each layer's backward, for a group that already finished it.
TEST(Projection, UnderTorch29EachLayerLeavesOneExpertsAllGatherStale) {
  const Projected p = projected("torch-2.9");
  const int64_t experts = p.plan.group("layers.0.moe.experts").all_gather_bytes;
  ASSERT_EQ(experts, 603'979'776);
  const auto rows = rank0(p.projection);
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[0].group, "layers.7");
  EXPECT_EQ(rows[0].stale, 0);
  for (std::size_t i = 1; i + 1 < rows.size(); ++i) EXPECT_EQ(rows[i].stale - rows[i - 1].stale, experts) << rows[i].group;
  EXPECT_EQ(p.projection.layers.size(), 16u * 8u);  // every rank's
  // The run at small widths schedules alike, so it prices alike; only the real widths measure.
  const Projected small = projected("torch-2.9", 0, Widths::Small);
  const auto small_rows = rank0(small.projection);
  ASSERT_EQ(small_rows.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(small_rows[i].group, rows[i].group);
    EXPECT_EQ(small_rows[i].stale, rows[i].stale) << rows[i].group;
    EXPECT_EQ(small_rows[i].pending, rows[i].pending) << rows[i].group;
    EXPECT_EQ(small_rows[i].measured, -1);
    EXPECT_GT(rows[i].measured, 0) << rows[i].group;
  }
  // The shape-only run measures, in its own blocks' bytes, what each layer's backward adds: one
  // more stale experts all-gather (16 local experts x two [4096, 1536] matrices, bfloat16, whole),
  // the layer's sharded float32 gradients (the experts' over their 2 shards; the block's attention
  // Linear(4096, 4096) with bias and router Linear(4096, 128) over 16), less the [4096, 4096]
  // bfloat16 input full AC kept for it. Exactly.
  const int64_t experts_params = 16LL * 2 * 4096 * 1536, block_params = 4096LL * 4096 + 4096 + 4096LL * 128;
  const int64_t stale = experts_params * 2, grads = experts_params / 2 * 4 + block_params / 16 * 4, kept_input = 4096LL * 4096 * 2;
  for (std::size_t i = 2; i + 1 < rows.size(); ++i)
    EXPECT_EQ(rows[i].measured - rows[i - 1].measured, stale + grads - kept_input)
        << rows[i].group;
}

TEST(Projection, UnderTorch211AndStrictItStaysFlat) {
  for (const char* profile : {"torch-2.11", "strict"}) {
    const Projected p = projected(profile);
    const int64_t block = p.plan.group("layers.0").all_gather_bytes, experts = p.plan.group("layers.0.moe.experts").all_gather_bytes;
    // At most what comes next in backward is prefetched: the layer below and its experts, or
    // after layer 0 the embedding.
    const int64_t next = std::max(block + experts, p.plan.group("embed").all_gather_bytes);
    for (const auto& row : rank0(p.projection)) {
      EXPECT_EQ(row.stale, 0) << profile << " " << row.group;
      EXPECT_LE(row.pending + row.unsharded, next) << profile << " " << row.group;
    }
  }
}

TEST(Projection, TheBaselineAndTheOutOfMemoryLayer) {
  const Projected unbounded = projected("torch-2.9");
  const Baseline& b = unbounded.projection.baseline;
  int64_t shards = 0;
  for (const auto& g : unbounded.plan.groups) shards += g.sharded_bytes;
  EXPECT_EQ(b.params, shards);
  EXPECT_EQ(b.grads, shards);          // float32 shards, float32 reduce: every parameter trains
  EXPECT_EQ(b.optimizer, 2 * shards);  // AdamW's two float32 states
  EXPECT_EQ(b.kept_per_layer, 4096 * 4096 * 2);  // full AC keeps each layer's bfloat16 input
  const auto rows = rank0(unbounded.projection);
  EXPECT_EQ(rows[2].total, b.fixed() + rows[2].activations + rows[2].pending + rows[2].unsharded);
  EXPECT_EQ(rows[2].activations, 5 * b.kept_per_layer + b.recompute);  // layers 0-4 still hold their inputs
  // A device just too small for the fourth layer's backward: the stale all-gathers run it out there.
  const Projected p = projected("torch-2.9", rows[3].total - 1);
  ASSERT_TRUE(p.projection.out_of_memory);
  EXPECT_EQ(p.projection.out_of_memory->group, rows[3].group);
  const std::string table = projection_table(p.projection);
  EXPECT_NE(table.find("projection: out of memory at " + rows[3].group + "'s backward on rank"), std::string::npos) << table;
  EXPECT_NE(table.find("stale +0.56 GiB"), std::string::npos) << table;
  EXPECT_FALSE(projected("torch-2.11", rows[3].total - 1).projection.out_of_memory);  // the fixed torch fits
  const std::string html = projection_html(p.projection, "qwen3_moe", "world 16", "torch-2.9");
  EXPECT_NE(html.find("Out of memory at " + rows[3].group + "'s backward"), std::string::npos);
  EXPECT_NE(html.find("\"oom\":\"" + rows[3].group + "\""), std::string::npos);  // the plot's data marks it
  EXPECT_NE(html.find("<tr class=\"oom\"><td>" + rows[3].group + "</td>"), std::string::npos);
}

// A dense Llama-3-70B-shaped model at world 64 (8 of its 80 layers, 64 rank threads), shape-only
// at its real widths: after each block's backward exactly the next block's all-gather is pending,
// the hand arithmetic's 855,654,400 parameters in bfloat16; after block 0 the embedding's. The
// run's own all-gathers are its blocks' (one Linear for attention, a two-matrix MLP), exactly.
TEST(Projection, DenseLlamaAtWorld64PendsExactlyTheNextBlock) {
  ModelShape m = read_hf_config(SHARDFUZZ_SOURCE_DIR "/tests/data/hf/llama-3-70b.json");
  m.layers = 8;
  m.layer_is_moe.resize(8);
  Recipe r;
  r.world = 64;
  const FsdpPlan plan = plan_fsdp(m, r);
  const ImportedScenario imported = imported_scenario(m, r, plan, "torch-2.11", Widths::Real);
  ASSERT_TRUE(imported.scenario.shape_only.has_value()) << imported.execution;
  EXPECT_NE(imported.execution.find("shape-only"), std::string::npos) << imported.execution;
  const RunRecord run = run_threads(imported.scenario);
  ASSERT_TRUE(run.ok()) << run.error;
  EXPECT_EQ(run.device, "meta");
  const Projection p = project(run, imported, plan, m, r);
  EXPECT_EQ(p.layers.size(), 64u * 8u);
  const int64_t run_block = (8192LL * 8192 + 8192) + (8192LL * 28672 + 28672) + (28672LL * 8192 + 8192);
  for (const auto& e : run.ranks[0].timeline)
    for (const auto& [group, bytes] : e.pending_all_gather_bytes)
      if (group.rfind("layers.", 0) == 0) EXPECT_EQ(bytes, 2 * run_block) << e.event << " " << e.group << ": " << group;
  for (const auto& row : rank0(p)) {
    const int64_t expected = row.group == "layers.0" ? 128256LL * 8192 * 2 : 855'654'400LL * 2;
    EXPECT_EQ(row.pending + row.unsharded, expected) << row.group;
    EXPECT_EQ(row.stale, 0) << row.group;
  }
}

}  // namespace
}  // namespace shardfuzz::harness::import
