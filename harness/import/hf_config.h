// Reading a Hugging Face config.json into a ModelShape: qwen3_moe, qwen2_moe, mixtral,
// deepseek_v3 (shared experts, first dense layers, MLA), and the dense llama and qwen3.
#pragma once

#include "harness/import/model_shape.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace shardfuzz::harness::import {

// The model types read.
const std::vector<std::string>& hf_model_types();

// Throws std::invalid_argument naming the config's key ("config.json: num_experts: missing (a
// qwen3_moe config needs it)", "config.json: hidden_size: -1 must be positive"); an unknown
// model_type names the types read, and a config without model_type names which of the keys every
// type needs were missing.
ModelShape model_shape_from_hf_config(const nlohmann::json& config, const std::string& where = "config.json");

// The same, from a file (its path names the errors).
ModelShape read_hf_config(const std::string& path);

}  // namespace shardfuzz::harness::import
