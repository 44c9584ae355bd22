// Each Hugging Face architecture the importer reads, on its published config (tests/data/hf), and
// the errors a bad config gets.
#include "harness/import/hf_config.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace shardfuzz::harness::import {
namespace {

ModelShape config(const std::string& name) { return read_hf_config(SHARDFUZZ_SOURCE_DIR "/tests/data/hf/" + name + ".json"); }

std::string error_of(const nlohmann::json& j) {
  try {
    model_shape_from_hf_config(j);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(HfConfig, Qwen3MoeIsEveryLayerMoeWithGqaAndQkNorm) {
  const ModelShape m = config("qwen3-235b-a22b");
  EXPECT_EQ(m.model_type, "qwen3_moe");
  EXPECT_EQ(m.layers, 94);
  EXPECT_EQ(m.moe_layers(), 94);
  EXPECT_EQ(m.hidden, 4096);
  EXPECT_EQ(m.vocab, 151936);
  EXPECT_FALSE(m.tied_embeddings);
  EXPECT_EQ(m.attention.heads, 64);
  EXPECT_EQ(m.attention.kv_heads, 4);
  EXPECT_EQ(m.attention.head_dim, 128);
  EXPECT_TRUE(m.attention.qk_norm);
  EXPECT_EQ(m.moe.experts, 128);
  EXPECT_EQ(m.moe.top_k, 8);
  EXPECT_EQ(m.moe.expert_intermediate, 1536);
  EXPECT_EQ(m.moe.shared_experts, 0);
}

TEST(HfConfig, Qwen2MoeHasAGatedSharedExpert) {
  const ModelShape m = config("qwen1.5-moe-a2.7b");
  EXPECT_EQ(m.moe.experts, 60);
  EXPECT_EQ(m.moe.top_k, 4);
  EXPECT_EQ(m.moe.shared_experts, 1);
  EXPECT_EQ(m.moe.shared_intermediate, 5632);
  EXPECT_TRUE(m.moe.shared_expert_gate);
  EXPECT_FALSE(m.attention.qk_norm);
  EXPECT_EQ(m.attention.head_dim, 2048 / 16);  // no head_dim key: hidden / heads
}

TEST(HfConfig, MixtralsExpertsUseTheIntermediateSize) {
  const ModelShape m = config("mixtral-8x7b");
  EXPECT_EQ(m.moe.experts, 8);
  EXPECT_EQ(m.moe.top_k, 2);
  EXPECT_EQ(m.moe.expert_intermediate, 14336);
  EXPECT_EQ(m.attention.kv_heads, 8);
  EXPECT_EQ(m.moe_layers(), 32);
}

TEST(HfConfig, DeepSeekV3HasDenseFirstLayersSharedExpertsAndMla) {
  const ModelShape m = config("deepseek-v3");
  EXPECT_EQ(m.layers, 61);
  EXPECT_FALSE(m.is_moe(0));
  EXPECT_FALSE(m.is_moe(2));
  EXPECT_TRUE(m.is_moe(3));
  EXPECT_EQ(m.moe_layers(), 58);
  EXPECT_EQ(m.dense.intermediate, 18432);
  EXPECT_EQ(m.moe.experts, 256);
  EXPECT_EQ(m.moe.shared_experts, 1);
  EXPECT_EQ(m.moe.shared_intermediate, 2048);
  EXPECT_EQ(m.attention.kind, AttentionShape::Kind::Mla);
  EXPECT_EQ(m.attention.q_lora_rank, 1536);
  EXPECT_EQ(m.attention.kv_lora_rank, 512);
  EXPECT_EQ(m.attention.qk_rope_head_dim, 64);
}

TEST(HfConfig, DenseLlamaAndQwen3) {
  const ModelShape llama = config("llama-3-70b");
  EXPECT_EQ(llama.moe_layers(), 0);
  EXPECT_FALSE(llama.moe.moe);
  EXPECT_EQ(llama.dense.intermediate, 28672);
  EXPECT_EQ(llama.attention.head_dim, 128);
  const ModelShape qwen3 = config("qwen3-8b");
  EXPECT_TRUE(qwen3.attention.qk_norm);
  EXPECT_EQ(qwen3.layers, 36);
}

TEST(HfConfig, BadConfigsNameTheKey) {
  nlohmann::json j = nlohmann::json::parse(R"({"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128, "num_experts_per_tok": 2,
    "moe_intermediate_size": 32})");
  EXPECT_EQ(error_of(j), "config.json: num_experts: missing (a qwen3_moe config needs it)");
  j["num_experts"] = "eight";
  EXPECT_EQ(error_of(j), "config.json: num_experts: \"eight\" is not an integer");
  j["num_experts"] = 1;
  EXPECT_EQ(error_of(j), "config.json: num_experts_per_tok: 2 is more than the 1 experts");
  j["num_experts"] = 8;
  j["num_key_value_heads"] = 3;
  EXPECT_EQ(error_of(j), "config.json: num_key_value_heads: 3 does not divide num_attention_heads (4)");
  j["num_key_value_heads"] = 2;
  j["hidden_size"] = -4;
  EXPECT_NE(error_of(j).find("config.json: hidden_size: -4 outside [1, "), std::string::npos) << error_of(j);
  j["hidden_size"] = 64;
  EXPECT_EQ(error_of(j), "(no error)");
  j["model_type"] = "gpt2";
  EXPECT_EQ(error_of(j), "config.json: model_type: \"gpt2\" is not read (deepseek_v3, llama, mixtral, qwen2_moe, qwen3, qwen3_moe)");
  EXPECT_EQ(error_of(nlohmann::json{{"hidden_size", 8}}),
            "config.json: model_type: missing (one of deepseek_v3, llama, mixtral, qwen2_moe, qwen3, qwen3_moe); of the keys "
            "every architecture needs, missing: num_hidden_layers, num_attention_heads, vocab_size, intermediate_size");
  EXPECT_NE(error_of(nlohmann::json::array()).find("not a JSON object"), std::string::npos);
  try {
    read_hf_config("/nonexistent/config.json");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/config.json: cannot be read");
  }
}

}  // namespace
}  // namespace shardfuzz::harness::import
