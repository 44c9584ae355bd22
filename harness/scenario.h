// Scenario: one whole sharded-training run as plain data — the world and its meshes, the model
// (blocks, head), where fully_shard goes and with which options (any module path, nested
// anywhere legal), activation checkpointing per block, frozen parameters, the semantics profile,
// steps, dims, dtype, optimizer and seed. It round-trips through JSON ("schema": 1) and is what
// the generator draws, the shrinker reduces and reproducers/ stores.
#pragma once

#include "runtime/ac/checkpoint.h"
#include "runtime/fsdp/options.h"
#include "runtime/train/optimizer.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::harness {

inline constexpr int kScenarioSchema = 1;

// The model's module paths: "" (root), "layers.i", "layers.i.attn", "layers.i.moe",
// "layers.i.moe.experts", "layers.i.moe.router", "layers.i.mlp", "layers.i.mlp.fc1",
// "layers.i.mlp.fc2", "out". Tree depth from the root is at most 3.
struct BlockSpec {
  enum class Kind { Moe, Mlp };
  Kind kind = Kind::Moe;
  bool gated = true;  // MoE only: experts' output times router scores
  ac::CheckpointMode ac = ac::CheckpointMode::None;
  bool frozen = false;  // every parameter of the block requires_grad = false
  // LoRA placement: module paths (inside this block) of linears that get adapters. The field
  // exists for the schema; the zoo issue fills in the modules (validation rejects non-empty now).
  std::vector<std::string> lora;
};

struct ShardSpec {
  fsdp::ReshardAfterForward reshard_after_forward;  // "auto" | true | false | int N
  int shard_dim = 0;
  // Mesh: "dp" = the whole world (1-D); "experts" = HSDP over the experts mesh
  // (ep = world / expert_shard_size replicate x dp_mod_ep = expert_shard_size shard).
  std::string mesh = "dp";
  // Explicit prefetch lists: absent (nullopt), empty, or module paths; "self" names this module.
  std::optional<std::vector<std::string>> forward_prefetch;
  std::optional<std::vector<std::string>> backward_prefetch;
};

struct Dims {
  int64_t dim = 16;
  int64_t hidden = 8;
  int64_t experts = 2;
  int64_t tokens = 4;
};

struct Scenario {
  int schema = kScenarioSchema;
  std::string name;
  uint64_t seed = 0;
  int world_size = 2;
  int expert_shard_size = 0;  // 0: the experts mesh is the world; k: ep = world/k x dp_mod_ep = k
  std::string profile = "torch-2.11";
  int steps = 2;
  Dims dims;
  std::string dtype = "float32";
  // "mean": the mean of the output (keeps generated runs finite, so parity means something);
  // "sum": the sum of the output, as the recorded traces use.
  std::string loss = "mean";
  train::OptimizerConfig optimizer;
  bool input_requires_grad = true;
  bool input_per_rank = true;  // each rank its own batch (false: every rank and step the same input)
  std::vector<BlockSpec> blocks;
  std::map<std::string, ShardSpec> fully_shard;  // module path ("" = root) -> options

  // Every module path of the model this scenario builds, pre-order.
  std::vector<std::string> module_paths() const;
  // Throws std::invalid_argument naming the JSON path of the first bad value (e.g.
  // "fully_shard[\"layers.9\"]: no such module", "world_size: 0 outside [1, 64]"). Checks the size
  // budget before anything is allocated.
  void validate() const;
  // Bytes the model's parameters take on one rank before sharding (for the size budget).
  int64_t full_parameter_bytes() const;
};

// Limits a scenario must stay within (validation; the generator stays well inside).
struct ScenarioLimits {
  static constexpr int kMaxWorld = 64;
  static constexpr int kMaxBlocks = 128;
  static constexpr int kMaxSteps = 1000;
  static constexpr int64_t kMaxDim = 1 << 16;
  static constexpr int64_t kMaxParameterBytes = int64_t{1} << 30;     // per rank, before sharding
  static constexpr int64_t kMaxActivationElements = int64_t{1} << 28;  // tokens x max(dim, hidden x experts)
};

}  // namespace shardfuzz::harness
