// Naming what a scenario exercises.
#include "harness/scenario/scenario_features.h"

#include <algorithm>
#include <functional>
#include <utility>

namespace shardfuzz::harness {
namespace {

using Test = std::function<bool(const Scenario&)>;

bool any_block(const Scenario& s, const std::function<bool(const BlockSpec&)>& f) {
  return std::any_of(s.blocks.begin(), s.blocks.end(), f);
}

bool any_shard(const Scenario& s, const std::function<bool(const std::string&, const ShardSpec&)>& f) {
  return std::any_of(s.fully_shard.begin(), s.fully_shard.end(), [&](const auto& kv) { return f(kv.first, kv.second); });
}

bool nested_group(const Scenario& s) {
  // A group inside a block: "layers.i.<something>" (a block itself is "layers.i").
  return any_shard(s, [](const std::string& path, const ShardSpec&) {
    const auto parts = split_block_path(path);
    return parts && !parts->second.empty();
  });
}

// An experts mesh that replicates (ep > 1 replicas) and shards: HSDP, without expert parallelism.
bool hsdp(const Scenario& s) {
  const bool replicated = s.expert_shard_size > 0 && s.world_size / s.expert_shard_size > 1;
  return !s.expert_parallel && replicated &&
         any_shard(s, [](const std::string&, const ShardSpec& p) { return p.mesh == "experts"; });
}

const std::vector<std::pair<std::string, Test>>& tests() {
  static const std::vector<std::pair<std::string, Test>> all = {
      {"expert_parallel", [](const Scenario& s) { return s.expert_parallel && s.expert_parallel_degree() > 1; }},
      {"hsdp", hsdp},
      {"mixed_precision", [](const Scenario& s) { return s.mixed_precision.has_value(); }},
      {"lora", [](const Scenario& s) { return any_block(s, [](const BlockSpec& b) { return !b.lora.empty(); }); }},
      {"frozen_block", [](const Scenario& s) { return any_block(s, [](const BlockSpec& b) { return b.frozen; }); }},
      {"no_grad_block", [](const Scenario& s) { return any_block(s, [](const BlockSpec& b) { return b.no_grad; }); }},
      // The shapes whose backward skips modules: a frozen prefix, an input that needs no grad.
      {"frozen_first_block", [](const Scenario& s) { return !s.blocks.empty() && s.blocks.front().frozen; }},
      {"input_without_grad", [](const Scenario& s) { return !s.input_requires_grad && !s.embed; }},
      {"gradient_accumulation", [](const Scenario& s) { return s.micro_batches > 1; }},
      {"forward_twice_per_backward", [](const Scenario& s) { return s.forwards_per_backward > 1; }},
      {"activation_checkpointing",
       [](const Scenario& s) { return any_block(s, [](const BlockSpec& b) { return b.ac != ac::CheckpointMode::None; }); }},
      {"nested_fully_shard", nested_group},
      {"explicit_prefetch", [](const Scenario& s) {
         return any_shard(s, [](const std::string&, const ShardSpec& p) { return p.forward_prefetch || p.backward_prefetch; });
       }},
      {"eval_forward", [](const Scenario& s) { return s.eval_forward; }},
  };
  return all;
}

}  // namespace

std::vector<std::string> features_of(const Scenario& s) {
  std::vector<std::string> out;
  for (const auto& [name, test] : tests())
    if (test(s)) out.push_back(name);
  out.push_back("world_" + std::to_string(s.world_size));
  return out;
}

const std::vector<std::string>& scenario_feature_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& t : tests()) n.push_back(t.first);
    return n;
  }();
  return names;
}

}  // namespace shardfuzz::harness
