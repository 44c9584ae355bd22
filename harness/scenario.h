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

// The model's module paths: "" (root), "embed" (token embedding, when asked), "layers", "layers.i"
// and inside each block "norm1"/"norm2" (pre-norms, when asked), "attn" (a Linear, or an Attention
// with "attn.q/k/v/o"), then "moe" with "moe.experts" and "moe.router" (gated dense MoE or routed
// top-k MoE) or "mlp" with "mlp.fc1"/"mlp.fc2"; then "norm" (final norm, when asked) and "out".
// Tree depth from the root is at most 3.
struct BlockSpec {
  // moe: the traces' dense mixture (every token through every expert, averaged; gated by router
  // scores when `gated`); routed_moe: top-k routing with expert parallelism when the scenario asks
  // for it; mlp: a dense MLP.
  enum class Kind { Moe, Mlp, RoutedMoe };
  Kind kind = Kind::Moe;
  bool gated = true;  // moe only: experts' output times router scores
  ac::CheckpointMode ac = ac::CheckpointMode::None;
  // The checkpoint region wraps the block's fully_shard hooks (HF gradient checkpointing of an
  // FSDP-wrapped layer) instead of sitting inside them (torchtitan's checkpoint_wrapper order).
  bool ac_wraps_hooks = false;
  bool frozen = false;   // every parameter of the block requires_grad = false
  bool attention = false;  // "attn" is multi-head attention (q/k/v/o) instead of one Linear
  bool norm = false;       // RMSNorm before attn and before the feed-forward ("norm1", "norm2")
  // The block runs under no_grad inside the training forward (a module used in forward but not in
  // backward; its groups register no backward hooks).
  bool no_grad = false;
  // LoRA adapters (rank dims.lora_rank, alpha dims.lora_alpha, base frozen) on these linears,
  // given relative to the block: "attn" (a Linear attn), "attn.q".."attn.o", "moe.router",
  // "mlp.fc1", "mlp.fc2".
  std::vector<std::string> lora;

  bool has_moe() const { return kind != Kind::Mlp; }
  bool has_router() const { return kind == Kind::RoutedMoe || (kind == Kind::Moe && gated); }
  // The block's linears that can carry LoRA adapters, relative to the block.
  std::vector<std::string> linear_paths() const;
  // The smaller of in/out features of the linear at `path` (one of linear_paths()): the largest
  // LoRA rank it takes.
  static int64_t linear_min_features(const std::string& path, const struct Dims& dims);
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
  int64_t heads = 1;     // attention heads (dim % heads == 0)
  int64_t top_k = 1;     // routed MoE: experts per token
  int64_t vocab = 16;    // token embedding rows (when embed)
  int64_t lora_rank = 2;
  double lora_alpha = 4.0;
};

// FSDP2's MixedPrecisionPolicy, passed to every fully_shard of the scenario (as torchtitan and
// accelerate do): parameters all-gathered and computed in param_dtype, gradients reduced in
// reduce_dtype (absent: in param_dtype, upstream's None). upcast_trainable: the parameters that
// require grad are stored in float32 (master weights: accelerate's preparation upcasts them; frozen
// ones keep the model's dtype); otherwise every parameter keeps the model's dtype (torchtitan).
struct MixedPrecisionSpec {
  std::string param_dtype = "bfloat16";
  std::optional<std::string> reduce_dtype = "float32";
  bool upcast_trainable = false;
};

// A planned fault, part of the scenario like everything else (generated, shrunk, stored in
// reproducers). At the collective boundary of rank `rank`, before its `collective`-th collective
// (0-based, counted over all the rank's groups):
//   "straggler"        — the rank arrives delay_ms late;
//   "collective_error" — the collective fails on that rank;
//   "hang"             — the rank never enters it (it stays away past its peers' deadline);
//   "crash"            — the rank dies (its thread, on the threads backend).
// Or inside the model, at step `step` (0-based) on rank `rank`:
//   "exception" — module `module` throws in its forward or backward (`pass`);
//   "nan", "inf" — the gradient flowing into module `module`'s output in backward gets one
//                  non-finite element (the run goes on; nonfinite_reported checks the runtime says
//                  where it first appeared);
// In the allocator: "oom" — the rank's allocation number `allocation` (0-based, counted from the
// start of training) fails, or the first allocation that takes the rank above `limit_bytes` of
// training memory does: c10::OutOfMemoryError from the allocator, as a real OOM.
// Or the process: "abort" — the rank aborts its process at collective `collective` (SIGABRT; on
// the threads backend that is every rank: only isolation survives it, as a process_survives
// finding — the nccl backend's rank crash).
// A fault whose collective (module call, allocation) the run never reaches does not fire.
struct FaultSpec {
  std::string kind = "collective_error";
  int rank = 0;
  int collective = 0;
  int delay_ms = 0;  // straggler only
  std::string module;  // exception, nan, inf: a module path ("" = the root)
  std::string pass;    // exception only: "forward" or "backward"
  int step = 0;        // exception, nan, inf: 0-based
  int allocation = -1;     // oom: the allocation that fails (-1: by limit_bytes)
  int64_t limit_bytes = 0;  // oom: the training memory the rank may not exceed (0: by allocation)
  // Whether it fires at a collective, at a module call, or in the allocator.
  bool is_collective() const { return kind == "straggler" || kind == "collective_error" || kind == "hang" ||
                                      kind == "crash" || kind == "abort"; }
  bool is_in_module() const { return kind == "exception" || kind == "nan" || kind == "inf"; }
  bool is_nonfinite() const { return kind == "nan" || kind == "inf"; }
  // Whether the ranks can recover from it and run the step again (train/recovery.h).
  bool is_recoverable() const { return kind == "oom" || kind == "exception"; }
  // Whether the run must stop with an error every rank sees: all kinds but a straggler under the
  // collective deadline, a non-finite gradient (training goes on with it) and, when the ranks
  // recover (RunRecord::recovery), an oom or exception (every rank sees it, then retries the step).
  bool must_be_detected(int deadline_ms, bool recovery) const {
    return !is_nonfinite() && !(recovery && is_recoverable()) && (kind != "straggler" || delay_ms >= deadline_ms);
  }
};
// Every kind a FaultSpec may have.
const std::vector<std::string>& fault_kinds();

// The dtypes a scenario names: "float32", "bfloat16".
const std::vector<std::string>& dtype_names();
// The scalar type of a dtype name; throws std::invalid_argument naming `path` for any other.
c10::ScalarType scalar_type_of(const std::string& name, const std::string& path = "dtype");
// The scenario's name of a scalar type ("float32", "bfloat16"; c10's own name for any other).
std::string dtype_name(c10::ScalarType type);

struct Scenario {
  int schema = kScenarioSchema;
  std::string name;
  uint64_t seed = 0;
  int world_size = 2;
  int expert_shard_size = 0;  // 0: the experts mesh is the world; k: ep = world/k x dp_mod_ep = k
  std::string profile = "torch-2.11";
  int steps = 2;
  Dims dims;
  std::string dtype = "float32";  // the model's parameters as loaded ("float32", "bfloat16")
  std::optional<MixedPrecisionSpec> mixed_precision;
  // "mean": the mean of the output (keeps generated runs finite, so parity means something);
  // "sum": the sum of the output, as the recorded traces use.
  std::string loss = "mean";
  train::OptimizerConfig optimizer;
  bool input_requires_grad = true;  // the float input (no embedding); token ids never need grad
  bool input_per_rank = true;  // each rank its own batch (false: every rank and step the same input)
  bool embed = false;          // a token embedding "embed" first; inputs are token ids
  bool final_norm = false;     // an RMSNorm "norm" before the head
  // Routed MoE experts are partitioned over ep = world_size / expert_shard_size ranks with
  // all-to-all token dispatch and combine; their fully_shard mesh "experts" is then the 1-D
  // dp_mod_ep mesh. Off: every rank holds every expert (HSDP over ep x dp_mod_ep).
  bool expert_parallel = false;
  // The step: micro_batches backward passes (gradient accumulation, set_is_last_backward(false)
  // until the last), each over the summed losses of forwards_per_backward forwards; then the
  // optimizer; then, when eval_forward, one more forward under no_grad (evaluation).
  int micro_batches = 1;
  int forwards_per_backward = 1;
  bool eval_forward = false;
  std::vector<BlockSpec> blocks;
  std::map<std::string, ShardSpec> fully_shard;  // module path ("" = root) -> options
  std::vector<FaultSpec> faults;                 // the fault plan (empty: no faults)

  // Every module path of the model this scenario builds, pre-order.
  std::vector<std::string> module_paths() const;
  // Throws std::invalid_argument naming the JSON path of the first bad value (e.g.
  // "fully_shard[\"layers.9\"]: no such module", "world_size: 0 outside [1, 64]"). Checks the size
  // budget before anything is allocated.
  void validate() const;
  // Bytes the model's parameters take on one rank before sharding, in the dtype they are stored in
  // (for the size budget).
  int64_t full_parameter_bytes() const;
  // The block whose experts module ("layers.i.moe.experts") is `path`, or nullptr.
  const BlockSpec* block_of_experts(const std::string& path) const;
  // Whether `path` is the experts module of a routed MoE block (EP-local under expert_parallel).
  bool is_routed_experts(const std::string& path) const;
  // Expert-parallel degree: world_size / expert_shard_size when expert_parallel, else 1.
  int expert_parallel_degree() const;
  // Mixed precision: the policy every fully_shard gets (empty without mixed_precision), the dtype
  // the model computes in, and the dtype a parameter is stored (and sharded) in.
  fsdp::MixedPrecisionPolicy mp_policy() const;
  c10::ScalarType compute_dtype() const;
  c10::ScalarType stored_dtype(bool requires_grad) const;
};

// Limits a scenario must stay within (validation; the generator stays well inside).
struct ScenarioLimits {
  static constexpr int kMaxWorld = 64;
  static constexpr int kMaxBlocks = 128;
  static constexpr int kMaxSteps = 1000;
  static constexpr int kMaxMicroBatches = 64;
  static constexpr int kMaxForwardsPerBackward = 16;
  static constexpr int64_t kMaxDim = 1 << 16;
  static constexpr int64_t kMaxParameterBytes = int64_t{1} << 30;     // per rank, before sharding
  // tokens x max(dim, hidden x experts, tokens x heads)
  static constexpr int64_t kMaxActivationElements = int64_t{1} << 28;
  static constexpr int kMaxFaults = 16;
  static constexpr int kMaxFaultCollective = 1 << 20;
  static constexpr int kMaxStragglerMs = 60000;
  static constexpr int kMaxFaultAllocation = 1 << 24;
  static constexpr int64_t kMaxFaultLimitBytes = int64_t{1} << 40;
};

}  // namespace shardfuzz::harness
