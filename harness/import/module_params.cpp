// Shapes of an imported model's parameters.
#include "harness/import/module_params.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>

namespace shardfuzz::harness::import {
namespace {

// Our name of each projection LoRA may target.
const std::map<std::string, std::string>& lora_names() {
  static const std::map<std::string, std::string> names = {
      {"q_proj", "attn.q"}, {"k_proj", "attn.k"}, {"v_proj", "attn.v"}, {"o_proj", "attn.o"},
      {"gate_proj", "mlp.fc1"}, {"up_proj", "mlp.fc3"}, {"down_proj", "mlp.fc2"}};
  return names;
}

void linear(std::vector<ParamShape>& out, const std::string& name, int64_t in, int64_t out_features, const LoraPlan& lora) {
  const bool adapted = lora.rank > 0 && std::any_of(lora.targets.begin(), lora.targets.end(), [&](const std::string& t) {
                         const auto it = lora_names().find(t);
                         return it != lora_names().end() && it->second == name;
                       });
  out.push_back({name + ".weight", {out_features, in}, !adapted});
  if (!adapted) return;
  out.push_back({name + ".lora_A", {lora.rank, in}, true});
  out.push_back({name + ".lora_B", {out_features, lora.rank}, true});
}

void attention(std::vector<ParamShape>& out, const ModelShape& m, const LoraPlan& lora) {
  const AttentionShape& a = m.attention;
  if (a.kind == AttentionShape::Kind::Gqa) {
    linear(out, "attn.q", m.hidden, a.heads * a.head_dim, lora);
    linear(out, "attn.k", m.hidden, a.kv_heads * a.head_dim, lora);
    linear(out, "attn.v", m.hidden, a.kv_heads * a.head_dim, lora);
    linear(out, "attn.o", a.heads * a.head_dim, m.hidden, lora);
    if (a.qk_norm) {
      out.push_back({"attn.q_norm.weight", {a.head_dim}});
      out.push_back({"attn.k_norm.weight", {a.head_dim}});
    }
    return;
  }
  const int64_t qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
  if (a.q_lora_rank > 0) {
    linear(out, "attn.q_a", m.hidden, a.q_lora_rank, {});
    out.push_back({"attn.q_a_norm.weight", {a.q_lora_rank}});
    linear(out, "attn.q_b", a.q_lora_rank, a.heads * qk_head, {});
  } else {
    linear(out, "attn.q", m.hidden, a.heads * qk_head, lora);
  }
  linear(out, "attn.kv_a", m.hidden, a.kv_lora_rank + a.qk_rope_head_dim, {});
  out.push_back({"attn.kv_a_norm.weight", {a.kv_lora_rank}});
  linear(out, "attn.kv_b", a.kv_lora_rank, a.heads * (a.qk_nope_head_dim + a.v_head_dim), {});
  linear(out, "attn.o", a.heads * a.v_head_dim, m.hidden, lora);
}

void swiglu(std::vector<ParamShape>& out, const std::string& prefix, int64_t hidden, int64_t inner, const LoraPlan& lora) {
  linear(out, prefix + ".fc1", hidden, inner, lora);  // gate
  linear(out, prefix + ".fc3", hidden, inner, lora);  // up
  linear(out, prefix + ".fc2", inner, hidden, lora);  // down
}

}  // namespace

int64_t ParamShape::numel() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
}

int64_t total_numel(const std::vector<ParamShape>& params) {
  int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}

const std::vector<std::string>& lora_target_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& kv : lora_names()) n.push_back(kv.first);
    return n;
  }();
  return names;
}

std::vector<ParamShape> block_params(const ModelShape& m, int64_t layer, const LoraPlan& lora) {
  if (layer < 0 || layer >= m.layers) throw std::out_of_range("block_params: no layer " + std::to_string(layer));
  std::vector<ParamShape> out;
  out.push_back({"norm1.weight", {m.hidden}});
  attention(out, m, lora);
  out.push_back({"norm2.weight", {m.hidden}});
  if (!m.is_moe(layer)) {
    swiglu(out, "mlp", m.hidden, m.dense.intermediate, lora);
    return out;
  }
  linear(out, "moe.router", m.hidden, m.moe.experts, {});
  if (m.moe.shared_experts > 0) swiglu(out, "moe.shared", m.hidden, m.moe.shared_intermediate, {});
  if (m.moe.shared_expert_gate) linear(out, "moe.shared_gate", m.hidden, 1, {});
  return out;
}

std::vector<ParamShape> expert_params(const ModelShape& m, int64_t local_experts) {
  const int64_t e = local_experts, inner = m.moe.expert_intermediate;
  return {{"w1", {e, inner, m.hidden}}, {"w2", {e, m.hidden, inner}}, {"w3", {e, inner, m.hidden}}};
}

std::vector<ParamShape> embedding_params(const ModelShape& m) { return {{"weight", {m.vocab, m.hidden}}}; }

std::vector<ParamShape> head_params(const ModelShape& m) {
  std::vector<ParamShape> out = {{"norm.weight", {m.hidden}}};
  if (!m.tied_embeddings) out.push_back({"out.weight", {m.vocab, m.hidden}});
  return out;
}

}  // namespace shardfuzz::harness::import
