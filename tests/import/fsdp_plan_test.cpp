// The FSDP plan's bytes against hand arithmetic, and the torchtitan TOML mapping.
#include "harness/import/fsdp_plan.h"
#include "harness/import/hf_config.h"
#include "harness/import/plan_table.h"
#include "harness/import/torchtitan_job.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace shardfuzz::harness::import {
namespace {

ModelShape config(const std::string& name) { return read_hf_config(SHARDFUZZ_SOURCE_DIR "/tests/data/hf/" + name + ".json"); }

Recipe world(int n, int ep = 1) {
  Recipe r;
  r.world = n;
  r.ep = ep;
  return r;
}

// Llama-3-70B at world 64, by hand: every sharded dim is a multiple of 64, so nothing pads.
TEST(FsdpPlan, Llama3_70bAtWorld64MatchesHandArithmetic) {
  const FsdpPlan plan = plan_fsdp(config("llama-3-70b"), world(64));
  const int64_t q = 8192LL * 8192, kv = 1024LL * 8192, o = 8192LL * 8192, norms = 2 * 8192, mlp = 3 * 28672LL * 8192;
  const int64_t block = q + 2 * kv + o + norms + mlp;
  ASSERT_EQ(block, 855'654'400);
  const PlannedGroup& g = plan.group("layers.17");
  EXPECT_EQ(g.numel, block);
  EXPECT_EQ(g.padded_numel, block);
  EXPECT_EQ(g.all_gather_bytes, block * 2);     // bfloat16 all-gather: 1,711,308,800 B
  EXPECT_EQ(g.sharded_bytes, block / 64 * 4);   // float32 shard: 53,478,400 B
  EXPECT_EQ(plan.group("embed").all_gather_bytes, 128256LL * 8192 * 2);
  EXPECT_EQ(plan.group("norm+out").numel, 8192 + 128256LL * 8192);
  EXPECT_EQ(plan.groups.size(), 80u + 3u);  // embed, 80 blocks, norm+out, root
  EXPECT_TRUE(plan.group("layers.78").reshard_after_forward);
  EXPECT_FALSE(plan.group("layers.79").reshard_after_forward);  // the last block: its backward comes first
  EXPECT_FALSE(plan.group("norm+out").reshard_after_forward);
}

// At world 3 each parameter's dim 0 pads up to a multiple of 3: q [8192, 4096] holds 8193 rows.
TEST(FsdpPlan, ShardedDimsPadToTheShardDegree) {
  const FsdpPlan plan = plan_fsdp(config("qwen3-8b"), world(3));
  const auto padded = [](int64_t rows, int64_t cols) { return (rows + 2) / 3 * 3 * cols; };
  const int64_t block = padded(4096, 1) * 2 /* norms */ + padded(4096, 4096) /* q */ + 2 * padded(1024, 4096) /* k, v */ +
                        padded(4096, 4096) /* o */ + 2 * padded(128, 1) /* q_norm, k_norm */ + 2 * padded(12288, 4096) +
                        padded(4096, 12288);
  EXPECT_EQ(plan.group("layers.0").padded_numel, block);
  EXPECT_GT(plan.group("layers.0").padded_numel, plan.group("layers.0").numel);
}

// Qwen3-235B-A22B on 16 ranks with EP 8: 16 experts per rank, sharded over dp_mod_ep = 2.
TEST(FsdpPlan, Qwen3_235bWithExpertParallelism) {
  const FsdpPlan plan = plan_fsdp(config("qwen3-235b-a22b"), world(16, 8));
  EXPECT_EQ(plan.local_experts, 16);
  const PlannedGroup& experts = plan.group("layers.0.moe.experts");
  EXPECT_EQ(experts.mesh, "dp_shard_mod_ep");
  EXPECT_EQ(experts.shard_degree, 2);
  EXPECT_EQ(experts.numel, 16 * 3 * 4096LL * 1536);
  EXPECT_EQ(experts.all_gather_bytes, 603'979'776);  // 576 MiB per experts group
  const int64_t attention = 8192LL * 4096 * 2 + 512LL * 4096 * 2 + 2 * 128;
  const int64_t block = attention + 2 * 4096 + 128LL * 4096 /* router */;
  EXPECT_EQ(plan.group("layers.0").numel, block);
  EXPECT_EQ(plan.group("layers.0").all_gather_bytes, 143'671'808);  // 137.0 MiB per block
  // LoRA rank 32 on q, k, v and o (PEFT): A [32, in], B [out, 32] each, the base weights frozen.
  const FsdpPlan lora = plan_fsdp(config("qwen3-235b-a22b"), world(16, 8), {32, {"q_proj", "k_proj", "v_proj", "o_proj"}});
  const int64_t adapters = 32 * (4096 + 8192) + 32 * (4096 + 512) * 2 + 32 * (8192 + 4096);
  EXPECT_EQ(lora.group("layers.0").numel, block + adapters);
  // Fewer local experts than shards: torchtitan shards them on dim 1.
  EXPECT_EQ(plan_fsdp(config("mixtral-8x7b"), world(16, 8)).group("layers.0.moe.experts").shard_dim, 1);
}

TEST(FsdpPlan, ARecipeThatDoesNotFitNamesTheField) {
  const ModelShape m = config("qwen3-235b-a22b");
  auto error_of = [&](const Recipe& r) {
    try {
      plan_fsdp(m, r);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error_of(world(16, 3)), "expert_parallel_degree: 3 does not divide data_parallel_shard_degree 16");
  EXPECT_EQ(error_of(world(12, 12)), "expert_parallel_degree: 12 does not divide the 128 experts");
  Recipe hsdp = world(16);
  hsdp.dp_replicate = 3;
  EXPECT_EQ(error_of(hsdp), "data_parallel_replicate_degree: 3 does not divide the world (16)");
  EXPECT_EQ(plan_fsdp(config("llama-3-70b"), world(8)).local_experts, 0);
  Recipe dense_ep = world(8, 2);
  try {
    plan_fsdp(config("llama-3-70b"), dense_ep);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "expert_parallel_degree: 2 on a model without routed experts");
  }
}

TEST(TorchtitanJob, TheReportsRecipeMapsToARecipe) {
  const TorchtitanJob job = read_torchtitan_job(SHARDFUZZ_SOURCE_DIR "/tests/data/torchtitan/qwen3-235b-16-ranks-ep8.toml");
  EXPECT_TRUE(job.world_known);
  EXPECT_EQ(job.recipe.world, 16);
  EXPECT_EQ(job.recipe.ep, 8);
  EXPECT_EQ(job.recipe.ac, "full");
  EXPECT_EQ(job.recipe.param_dtype, "bfloat16");
  EXPECT_EQ(job.recipe.reduce_dtype, "float32");
  EXPECT_EQ(job.recipe.seq_len, 4096);
  EXPECT_EQ(job.flavor, "235B-A22B");
}

TEST(TorchtitanJob, BadValuesNameTheTableAndKey) {
  auto error_of = [](const std::string& text) {
    try {
      torchtitan_job_from_toml(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error_of("[parallelism]\nexpert_parallel_degree = \"8\"\n"),
            "job.toml: parallelism.expert_parallel_degree: '8' is not an integer");
  EXPECT_EQ(error_of("[parallelism]\ntensor_parallel_degree = 2\n"),
            "job.toml: parallelism.tensor_parallel_degree: 2: only 1 is modelled (FSDP, HSDP and expert parallelism are)");
  EXPECT_EQ(error_of("[activation_checkpoint]\nmode = 3\n"), "job.toml: activation_checkpoint.mode: 3 is not a string");
  EXPECT_EQ(error_of("[activation_checkpoint]\nselective_ac_option = \"every\"\n"),
            "job.toml: activation_checkpoint.selective_ac_option: \"every\" is not \"op\" or a layer interval");
  EXPECT_EQ(error_of("parallelism = 3\n"), "job.toml: parallelism: not a table");
  EXPECT_NE(error_of("[parallelism\n").find("job.toml:1: not TOML"), std::string::npos) << error_of("[parallelism\n");
  const TorchtitanJob open = torchtitan_job_from_toml("[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = 2\n");
  EXPECT_FALSE(open.world_known);
  EXPECT_EQ(open.recipe.selective_ac_option, "2");
}

TEST(PlanTable, RunsOfBlocksAlikeFoldIntoOneRow) {
  const FsdpPlan plan = plan_fsdp(config("qwen3-235b-a22b"), world(16, 8));
  const std::string table = plan_table(plan);
  EXPECT_NE(table.find("layers.0-92.moe.experts"), std::string::npos) << table;
  EXPECT_NE(table.find("layers.93 "), std::string::npos) << table;
  EXPECT_NE(table.find("603,979,776 B (576.0 MiB)"), std::string::npos) << table;
}

}  // namespace
}  // namespace shardfuzz::harness::import
