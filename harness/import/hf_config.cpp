// Hugging Face config.json → ModelShape, one reader per model_type.
#include "harness/import/hf_config.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>

namespace shardfuzz::harness::import {
namespace {

constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxWidth = int64_t{1} << 24;

// One config being read: its keys, where it came from, and its model_type (for the errors).
struct Reader {
  const nlohmann::json& j;
  std::string where;
  std::string type;

  [[noreturn]] void bad(const std::string& key, const std::string& what) const {
    throw std::invalid_argument(where + ": " + key + ": " + what);
  }
  bool has(const std::string& key) const { return j.contains(key) && !j.at(key).is_null(); }

  int64_t integer(const std::string& key, int64_t max = kMaxWidth) const {
    if (!has(key)) bad(key, "missing (a " + type + " config needs it)");
    const auto& v = j.at(key);
    if (!v.is_number_integer()) bad(key, v.dump() + " is not an integer");
    const int64_t n = v.get<int64_t>();
    if (n <= 0 || n > max) bad(key, std::to_string(n) + " outside [1, " + std::to_string(max) + "]");
    return n;
  }
  int64_t integer_or(const std::string& key, int64_t fallback, int64_t max = kMaxWidth) const {
    return has(key) ? integer(key, max) : fallback;
  }
  // A count that may be 0 (first_k_dense_replace).
  int64_t count_or(const std::string& key, int64_t fallback, int64_t max) const {
    if (!has(key)) return fallback;
    const auto& v = j.at(key);
    if (!v.is_number_integer()) bad(key, v.dump() + " is not an integer");
    const int64_t n = v.get<int64_t>();
    if (n < 0 || n > max) bad(key, std::to_string(n) + " outside [0, " + std::to_string(max) + "]");
    return n;
  }
  bool boolean_or(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j.at(key).is_boolean()) bad(key, j.at(key).dump() + " is not true or false");
    return j.at(key).get<bool>();
  }
  std::vector<int64_t> integers_or_empty(const std::string& key) const {
    if (!has(key)) return {};
    if (!j.at(key).is_array()) bad(key, j.at(key).dump() + " is not a list of layer indices");
    std::vector<int64_t> out;
    for (const auto& v : j.at(key)) {
      if (!v.is_number_integer()) bad(key, v.dump() + " is not a layer index");
      out.push_back(v.get<int64_t>());
    }
    return out;
  }
};

// What every type shares: widths, layers, GQA heads, vocabulary, tying, dtype.
ModelShape common(const Reader& r) {
  ModelShape m;
  m.model_type = r.type;
  m.hidden = r.integer("hidden_size");
  m.layers = r.integer("num_hidden_layers", kMaxLayers);
  m.vocab = r.integer("vocab_size");
  m.tied_embeddings = r.boolean_or("tie_word_embeddings", false);
  if (r.has("torch_dtype")) {
    const auto& d = r.j.at("torch_dtype");
    if (!d.is_string() || (d != "bfloat16" && d != "float16" && d != "float32")) r.bad("torch_dtype", d.dump() + " is not bfloat16, float16 or float32");
    m.dtype = d.get<std::string>();
  }
  AttentionShape& a = m.attention;
  a.heads = r.integer("num_attention_heads");
  a.kv_heads = r.integer_or("num_key_value_heads", a.heads);
  if (a.heads % a.kv_heads != 0)
    r.bad("num_key_value_heads", std::to_string(a.kv_heads) + " does not divide num_attention_heads (" + std::to_string(a.heads) + ")");
  if (!r.has("head_dim") && m.hidden % a.heads != 0)
    r.bad("head_dim", "missing, and hidden_size (" + std::to_string(m.hidden) + ") is no multiple of num_attention_heads");
  a.head_dim = r.integer_or("head_dim", m.hidden / a.heads);
  m.dense.intermediate = r.integer("intermediate_size");
  return m;
}

void routed(const Reader& r, ModelShape& m, const std::string& experts_key, const std::string& width_key) {
  m.moe.moe = true;
  m.moe.experts = r.integer(experts_key);
  m.moe.top_k = r.integer("num_experts_per_tok");
  if (m.moe.top_k > m.moe.experts)
    r.bad("num_experts_per_tok", std::to_string(m.moe.top_k) + " is more than the " + std::to_string(m.moe.experts) + " experts");
  m.moe.expert_intermediate = r.integer(width_key);
}

// Qwen2-MoE and Qwen3-MoE: every decoder_sparse_step-th layer is MoE unless listed in mlp_only_layers.
ModelShape qwen_moe(const Reader& r, bool qwen3) {
  ModelShape m = common(r);
  m.attention.qk_norm = qwen3;
  routed(r, m, "num_experts", "moe_intermediate_size");
  if (!qwen3) {
    m.moe.shared_experts = 1;
    m.moe.shared_intermediate = r.integer("shared_expert_intermediate_size");
    m.moe.shared_expert_gate = true;
  }
  const int64_t step = r.integer_or("decoder_sparse_step", 1, kMaxLayers);
  const std::vector<int64_t> dense_only = r.integers_or_empty("mlp_only_layers");
  for (int64_t i = 0; i < m.layers; ++i)
    m.layer_is_moe.push_back((i + 1) % step == 0 && std::find(dense_only.begin(), dense_only.end(), i) == dense_only.end());
  return m;
}

ModelShape mixtral(const Reader& r) {
  ModelShape m = common(r);
  routed(r, m, "num_local_experts", "intermediate_size");
  m.layer_is_moe.assign(static_cast<std::size_t>(m.layers), true);
  return m;
}

// DeepSeek-V3: MLA, shared experts, the first first_k_dense_replace layers dense, then every
// moe_layer_freq-th layer MoE.
ModelShape deepseek_v3(const Reader& r) {
  ModelShape m = common(r);
  AttentionShape& a = m.attention;
  a.kind = AttentionShape::Kind::Mla;
  a.q_lora_rank = r.has("q_lora_rank") ? r.integer("q_lora_rank") : 0;
  a.kv_lora_rank = r.integer("kv_lora_rank");
  a.qk_nope_head_dim = r.integer("qk_nope_head_dim");
  a.qk_rope_head_dim = r.integer("qk_rope_head_dim");
  a.v_head_dim = r.integer("v_head_dim");
  routed(r, m, "n_routed_experts", "moe_intermediate_size");
  m.moe.shared_experts = r.count_or("n_shared_experts", 0, 64);
  m.moe.shared_intermediate = m.moe.shared_experts * m.moe.expert_intermediate;
  const int64_t first_dense = r.count_or("first_k_dense_replace", 0, m.layers);
  const int64_t freq = r.integer_or("moe_layer_freq", 1, kMaxLayers);
  for (int64_t i = 0; i < m.layers; ++i) m.layer_is_moe.push_back(i >= first_dense && i % freq == 0);
  return m;
}

ModelShape dense(const Reader& r, bool qk_norm) {
  ModelShape m = common(r);
  m.attention.qk_norm = qk_norm;
  m.layer_is_moe.assign(static_cast<std::size_t>(m.layers), false);
  return m;
}

const std::map<std::string, std::function<ModelShape(const Reader&)>>& readers() {
  static const std::map<std::string, std::function<ModelShape(const Reader&)>> all = {
      {"qwen3_moe", [](const Reader& r) { return qwen_moe(r, true); }},
      {"qwen2_moe", [](const Reader& r) { return qwen_moe(r, false); }},
      {"mixtral", mixtral},
      {"deepseek_v3", deepseek_v3},
      {"llama", [](const Reader& r) { return dense(r, false); }},
      {"qwen3", [](const Reader& r) { return dense(r, true); }},
  };
  return all;
}

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// A config without model_type: which of the keys every reader needs it lacks.
[[noreturn]] void no_model_type(const nlohmann::json& config, const std::string& where) {
  std::vector<std::string> missing;
  for (const char* key : {"hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "intermediate_size"})
    if (!config.contains(key)) missing.push_back(key);
  throw std::invalid_argument(where + ": model_type: missing (one of " + listed(hf_model_types()) + ")" +
                              (missing.empty() ? "" : "; of the keys every architecture needs, missing: " + listed(missing)));
}

}  // namespace

int64_t ModelShape::moe_layers() const { return std::count(layer_is_moe.begin(), layer_is_moe.end(), true); }

const std::vector<std::string>& hf_model_types() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> t;
    for (const auto& kv : readers()) t.push_back(kv.first);
    return t;
  }();
  return types;
}

ModelShape model_shape_from_hf_config(const nlohmann::json& config, const std::string& where) {
  if (!config.is_object()) throw std::invalid_argument(where + ": not a JSON object");
  if (!config.contains("model_type")) no_model_type(config, where);
  const auto& type = config.at("model_type");
  if (!type.is_string() || !readers().count(type.get<std::string>()))
    throw std::invalid_argument(where + ": model_type: " + type.dump() + " is not read (" + listed(hf_model_types()) + ")");
  const Reader r{config, where, type.get<std::string>()};
  ModelShape m = readers().at(r.type)(r);
  return m;
}

ModelShape read_hf_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot be read");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(path + ": not JSON: " + e.what());
  }
  return model_shape_from_hf_config(j, path);
}

}  // namespace shardfuzz::harness::import
