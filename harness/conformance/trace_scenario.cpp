// record.py's scenario keys, mapped onto a Scenario.
#include "harness/conformance/trace_scenario.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace shardfuzz::harness {
namespace {

template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& kind) {
  const nlohmann::json& v = j.at(key);
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(std::string("scenario.") + key + ": expected " + kind + ", got " + v.dump());
  }
}

}  // namespace

Scenario scenario_from_trace(const nlohmann::json& trace) {
  const nlohmann::json& j = trace.at("scenario");
  if (!j.is_object()) throw std::invalid_argument("scenario: expected an object, got " + j.dump());
  static const std::set<std::string> known = {"name", "blocks", "ac", "gated", "lora", "nested", "wrap_out",
                                              "explicit", "frozen_block0", "block_reshard_after_forward", "steps"};
  for (const auto& [key, value] : j.items())
    if (!known.count(key)) throw std::invalid_argument("scenario." + key + ": unknown key");
  Scenario s;
  s.name = j.contains("name") ? field<std::string>(j, "name", "a string") : "";
  s.profile = semantics::Profile::named(trace.at("profile").get<std::string>());
  s.world_size = trace.at("world_size").get<int>();
  s.steps = static_cast<int>(trace.at("steps").size());
  s.input_per_rank = false;  // record.py: one torch.randn after manual_seed(0), reused
  s.loss = "sum";
  const int blocks = field<int>(j, "blocks", "an integer");
  if (blocks < 1 || blocks > 64) throw std::invalid_argument("scenario.blocks: " + std::to_string(blocks) + " outside [1, 64]");
  BlockSpec block;
  block.ac = ac::checkpoint_mode_from_string(field<std::string>(j, "ac", "a string"));
  block.gated = j.contains("gated") && field<bool>(j, "gated", "a boolean");
  // record.py's LoRALinear: the attention projection's base frozen, adapters A [r, D] and B [D, r]
  // with r = 2 (the default dims.lora_rank) trainable.
  if (j.contains("lora") && field<bool>(j, "lora", "a boolean")) block.lora = {"attn"};
  s.blocks.assign(static_cast<std::size_t>(blocks), block);
  if (j.contains("frozen_block0") && field<bool>(j, "frozen_block0", "a boolean")) {
    s.blocks[0].frozen = true;
    s.input_requires_grad = false;
  }
  std::vector<int> nested;
  if (j.contains("nested")) {
    nested = field<std::vector<int>>(j, "nested", "a list of block indices");
    for (int b : nested)
      if (b < 0 || b >= blocks) throw std::invalid_argument("scenario.nested: block " + std::to_string(b) + " out of range");
  } else {
    for (int i = 0; i < blocks; ++i) nested.push_back(i);
  }
  auto is_nested = [&](int i) { return std::find(nested.begin(), nested.end(), i) != nested.end(); };
  ShardSpec block_spec;
  const bool raf = !j.contains("block_reshard_after_forward") || field<bool>(j, "block_reshard_after_forward", "a boolean");
  block_spec.reshard_after_forward = raf ? fsdp::ReshardAfterForward::yes() : fsdp::ReshardAfterForward::no();
  const std::string explicit_mode = j.contains("explicit") ? field<std::string>(j, "explicit", "a string") : "";
  if (!explicit_mode.empty() && explicit_mode != "torchtitan" && explicit_mode != "empty" && explicit_mode != "self_experts")
    throw std::invalid_argument("scenario.explicit: unknown value '" + explicit_mode + "' (torchtitan, empty, self_experts)");
  auto block_path = [](int i) { return "layers." + std::to_string(i); };
  auto experts_path = [&](int i) { return block_path(i) + ".moe.experts"; };
  for (int i = 0; i < blocks; ++i) {
    ShardSpec b = block_spec;
    if (explicit_mode == "torchtitan") {
      // Blocks prefetch the next block (+ experts) forward and the previous one backward; the
      // experts get no list, so they keep the implicit backward path.
      if (i + 1 < blocks) {
        b.forward_prefetch = std::vector<std::string>{block_path(i + 1)};
        if (is_nested(i + 1)) b.forward_prefetch->push_back(experts_path(i + 1));
      }
      if (i > 0) {
        b.backward_prefetch = std::vector<std::string>{block_path(i - 1)};
        if (is_nested(i - 1)) b.backward_prefetch->push_back(experts_path(i - 1));
      }
    } else if (explicit_mode == "empty") {
      b.backward_prefetch = std::vector<std::string>{};
    }
    s.fully_shard[block_path(i)] = b;
    if (is_nested(i)) {
      ShardSpec e = block_spec;
      if (explicit_mode == "self_experts") e.backward_prefetch = std::vector<std::string>{"self"};
      s.fully_shard[experts_path(i)] = e;
    }
  }
  if (!j.contains("wrap_out") || field<bool>(j, "wrap_out", "a boolean")) s.fully_shard["out"] = ShardSpec{};
  s.fully_shard[""] = ShardSpec{};
  return s;
}

}  // namespace shardfuzz::harness
