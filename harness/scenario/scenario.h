// Scenario: one whole sharded-training run as plain data — the world and its meshes, the model
// (blocks, head), where fully_shard goes and with which options (any module path, nested
// anywhere legal), activation checkpointing per block, frozen parameters, the semantics profile,
// steps, dims, dtype, optimizer and seed. It round-trips through JSON ("schema": 1) and is what
// the generator draws, the shrinker reduces and reproducers/ stores.
#pragma once

#include "harness/scenario/enum_names.h"
#include "harness/scenario/fault_plan.h"
#include "harness/scenario/fields.h"
#include "harness/scenario/schedule_spec.h"
#include "harness/scenario/scenario_limits.h"
#include "runtime/ac/checkpoint.h"
#include "runtime/fsdp/options.h"
#include "runtime/semantics/profile.h"
#include "runtime/train/optimizer.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
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

template <>
struct EnumNames<BlockSpec::Kind> {
  using K = BlockSpec::Kind;
  static constexpr const char* what = "a block kind";
  static constexpr std::array<std::pair<K, const char*>, 3> table{{{K::Moe, "moe"}, {K::RoutedMoe, "routed_moe"}, {K::Mlp, "mlp"}}};
};
template <>
struct EnumNames<ac::CheckpointMode> {
  static constexpr const char* what = "a checkpoint mode";
  static constexpr const auto& table = ac::kCheckpointModeNames;
};

template <>
struct Fields<BlockSpec> {
  static constexpr const char* what = "a block";
  template <class R, class V>
  static void visit(R& b, V& v) {
    v("kind", b.kind, allow::Any{}, "");
    v("gated", b.gated, allow::Any{}, "MoE only (experts' output times router scores; adds `layers.i.moe.router`); ignored for `mlp`");
    v("ac", b.ac, allow::Any{}, "`selective_ops`: save matmul outputs, recompute the rest");
    v("ac_wraps_hooks", b.ac_wraps_hooks, allow::Any{},
      "the checkpoint region wraps the block's fully_shard hooks (HF gradient checkpointing) instead of sitting inside them "
      "(torchtitan)");
    v("frozen", b.frozen, allow::Any{}, "every parameter of the block has `requires_grad = false`");
    v("attention", b.attention, allow::Any{}, "multi-head attention `attn.q/k/v/o` instead of one Linear");
    v("norm", b.norm, allow::Any{}, "RMSNorms `norm1`, `norm2`");
    v("no_grad", b.no_grad, allow::Any{}, "the block (hooks included) runs under no_grad: used in forward, not in backward");
    v("lora", b.lora, allow::Any{},
      "linears of the block, relative to it, each at most once: `\"attn\"` (a Linear attn), `\"attn.q\"` ... `\"attn.o\"`, "
      "`\"moe.router\"`, `\"mlp.fc1\"`, `\"mlp.fc2\"`");
  }
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

// The meshes a placement may name: "dp", "experts".
const std::vector<std::string>& mesh_names();

template <>
struct Fields<ShardSpec> {
  static constexpr const char* what = "a `fully_shard` entry";
  template <class R, class V>
  static void visit(R& s, V& v) {
    v("reshard_after_forward", s.reshard_after_forward, allow::Any{},
      "`\"auto\"` is upstream's `None` (true, but false for the root); an integer `N` keeps a 1/N slice after forward: "
      "`N >= 1` and divides the shard group size (`N = 1` behaves as `false`, `N =` group size as `true`)");
    v("shard_dim", s.shard_dim, allow::Between{0, 2},
      "`0` anywhere; `1` or `2` only on `layers.i.moe.experts` (weights of 3 dims; torchtitan uses Shard(1) when "
      "dp_mod_ep x ep exceeds the experts), and then `dims.dim` and `dims.hidden` must both divide by the shard group size");
    v("mesh", s.mesh, allow::OneOf{mesh_names, "a mesh"},
      "`\"dp\"`: the whole world, 1-D; `\"experts\"`: see `expert_shard_size` and `expert_parallel`");
    v("forward_prefetch", s.forward_prefetch, allow::Any{},
      "absent: implicit prefetching only; `[]`: explicitly none; otherwise `\"self\"` or paths that are themselves keys "
      "of `fully_shard`");
    v("backward_prefetch", s.backward_prefetch, allow::Any{}, "as `forward_prefetch`");
  }
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

template <>
struct Fields<Dims> {
  static constexpr const char* what = "dims";
  template <class R, class V>
  static void visit(R& d, V& v) {
    using L = ScenarioLimits;
    v("dim", d.dim, allow::Between{1, L::kMaxDim}, "the model width");
    v("hidden", d.hidden, allow::Between{1, L::kMaxDim}, "the experts' and MLPs' inner width");
    v("experts", d.experts, allow::Between{1, L::kMaxDim}, "");
    v("tokens", d.tokens, allow::Between{1, L::kMaxTokens}, "tokens per rank per step (over 65,536 only with `shape_only`)");
    v("heads", d.heads, allow::Between{1, L::kMaxDim}, "divides `dims.dim` when a block has attention");
    v("top_k", d.top_k, allow::Between{1, L::kMaxDim}, "at most `dims.experts` when a block is a routed MoE");
    v("vocab", d.vocab, allow::Between{1, L::kMaxVocab}, "rows of `embed`");
    v("lora_rank", d.lora_rank, allow::Between{1, 1024}, "at most min(in, out) of every adapted linear");
    v("lora_alpha", d.lora_alpha, allow::Positive{}, "adapter scale alpha / rank");
  }
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

// The dtypes a scenario names: "float32", "bfloat16".
const std::vector<std::string>& dtype_names();

// A shape-only run: every tensor on LibTorch's meta device (shapes, dtypes and bytes, no data), so
// the FSDP state machine, hooks, AC recompute, prefetch, collectives, the ledger and the timeline
// run at a production model's real sizes on a laptop. What depends on values comes from a stated
// assumption: the tokens each expert receives (hence the all-to-all splits and the experts'
// activations) follow routing_skew. Properties that need values say SKIP.
struct ShapeOnlySpec {
  double routing_skew = 0.0;
};

template <>
struct Fields<ShapeOnlySpec> {
  static constexpr const char* what = "shape-only";
  template <class R, class V>
  static void visit(R& s, V& v) {
    v("routing_skew", s.routing_skew, allow::NonNegative{},
      "the tokens each expert receives: global expert `e` gets a share proportional to `1 / (e + 1)^routing_skew` of "
      "every rank's `tokens x top_k` copies (`0`: balanced, every expert alike; `1`: Zipf)");
  }
};

template <>
struct Fields<MixedPrecisionSpec> {
  static constexpr const char* what = "mixed precision";
  template <class R, class V>
  static void visit(R& m, V& v) {
    v("param_dtype", m.param_dtype, allow::OneOf{dtype_names, "a dtype"},
      "the all-gather, the unsharded parameters, their gradients and the forward (every fully_shard-ed module casts its "
      "float inputs, `cast_forward_inputs`)");
    v("reduce_dtype", m.reduce_dtype, allow::OneOf{dtype_names, "a dtype"},
      "absent is upstream's `None`: reduce in `param_dtype`. The reduced gradient is accumulated into the sharded one in "
      "the parameter's own dtype");
    v("upcast_trainable", m.upcast_trainable, allow::Any{},
      "store the parameters that require grad in float32 (master weights, as accelerate's preparation upcasts them); "
      "frozen ones keep `dtype`. `false`: every parameter keeps `dtype` (torchtitan)");
  }
};

template <>
struct EnumNames<train::OptimizerConfig::Kind> {
  using K = train::OptimizerConfig::Kind;
  static constexpr const char* what = "an optimizer";
  static constexpr std::array<std::pair<K, const char*>, 2> table{{{K::Sgd, "sgd"}, {K::AdamW, "adamw"}}};
};

template <>
struct Fields<train::OptimizerConfig> {
  static constexpr const char* what = "the optimizer";
  template <class R, class V>
  static void visit(R& o, V& v) {
    v("kind", o.kind, allow::Any{}, "");
    v("lr", o.lr, allow::Positive{}, "");
    v("beta1", o.beta1, allow::Fraction{}, "checked for SGD too");
    v("beta2", o.beta2, allow::Fraction{}, "checked for SGD too");
    v("eps", o.eps, allow::Positive{}, "");
    v("weight_decay", o.weight_decay, allow::NonNegative{}, "");
  }
};

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
  semantics::Profile profile = semantics::Profile::named("torch-2.11");  // parsed once, as read
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
  int64_t device_memory_bytes = 0;  // what each rank's device holds for training (0: unbounded)
  std::vector<BlockSpec> blocks;
  std::map<std::string, ShardSpec> fully_shard;  // module path ("" = root) -> options
  std::vector<FaultSpec> faults;                 // the fault plan (empty: no faults)
  std::optional<ShapeOnlySpec> shape_only;       // absent: a run with data
  std::optional<ScheduleSpec> schedule;          // threads backend: absent is the canonical schedule

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

// The losses a scenario names: "mean", "sum".
const std::vector<std::string>& loss_names();

// The block index of a "layers.i[.sub]" module path, with the rest (".sub", or "" for the block
// itself); nullopt for any other path.
std::optional<std::pair<std::size_t, std::string>> split_block_path(const std::string& path);

// The scenario's fields but "schema" (read first, written first). `faults` is written only when
// planned, so fault-free files stay as they were.
template <>
struct Fields<Scenario> {
  static constexpr const char* what = "a scenario";
  template <class R, class V>
  static void visit(R& s, V& v) {
    using L = ScenarioLimits;
    v("name", s.name, allow::Any{}, "");
    v("seed", s.seed, allow::Any{}, "");
    v("world_size", s.world_size, allow::Between{1, L::kMaxWorld}, "");
    v("expert_shard_size", s.expert_shard_size, allow::Between{0, L::kMaxWorld},
      "`0`: the experts mesh is the world, 1-D; a divisor `k` of `world_size`: the experts mesh is HSDP "
      "(`ep = world_size / k` replicas x `dp_mod_ep = k` shards)");
    v("profile", s.profile, allow::Any{},
      "a base `\"torch-2.7\"`, `\"torch-2.9\"`, `\"torch-2.11\"`, `\"strict\"`, then any `+switch` / `~switch` "
      "(docs/runtime.md, \"Semantics profiles\"), e.g. `\"strict+experts_skip_empty\"`");
    v("steps", s.steps, allow::Between{1, L::kMaxSteps}, "");
    v("dims", s.dims, allow::Any{}, "");
    v("dtype", s.dtype, allow::OneOf{dtype_names, "a dtype"},
      "the model's parameters as loaded (without `mixed_precision` it also computes in it, and a float input is fed in it)");
    v("mixed_precision", s.mixed_precision, allow::Any{},
      "FSDP2's `MixedPrecisionPolicy`, given to every `fully_shard` of the scenario; absent: none");
    v("loss", s.loss, allow::OneOf{loss_names, "a loss"},
      "`\"mean\"`: the mean of the output (keeps generated runs finite); `\"sum\"`: as the recorded traces use");
    v("optimizer", s.optimizer, allow::Any{}, "");
    v("input_requires_grad", s.input_requires_grad, allow::Any{}, "");
    v("input_per_rank", s.input_per_rank, allow::Any{}, "`false`: every rank and step gets the same input");
    v("embed", s.embed, allow::Any{}, "a token embedding `embed` first; inputs are token ids in [0, vocab)");
    v("final_norm", s.final_norm, allow::Any{}, "an RMSNorm `norm` before `out`");
    v("expert_parallel", s.expert_parallel, allow::Any{},
      "routed experts partitioned over `ep = world_size / expert_shard_size` ranks with all-to-all dispatch and combine "
      "(needs `expert_shard_size > 0` and `ep` dividing `dims.experts`); the `\"experts\"` mesh is then the 1-D "
      "`dp_mod_ep` mesh, which only routed experts may use, and every routed block's experts must be fully_shard-ed on it");
    v("micro_batches", s.micro_batches, allow::Between{1, L::kMaxMicroBatches},
      "backward passes per step (gradient accumulation; `set_is_last_backward(false)` until the last)");
    v("forwards_per_backward", s.forwards_per_backward, allow::Between{1, L::kMaxForwardsPerBackward},
      "forwards whose losses are summed before one backward");
    v("eval_forward", s.eval_forward, allow::Any{}, "one more forward under no_grad after the optimizer step");
    v("device_memory_bytes", s.device_memory_bytes, allow::Between{0, L::kMaxDeviceMemoryBytes},
      "the bytes each rank's device holds for training (0: unbounded); fits_device_memory names the first event past them");
    v("blocks", s.blocks, allow::AtMost{L::kMaxBlocks, "blocks"}, "");
    v("fully_shard", s.fully_shard, allow::Any{}, "must contain the root `\"\"`");
    v("faults", s.faults, allow::AtMost{L::kMaxFaults, "faults"}, "the fault plan (below); written only when non-empty");
    v("shape_only", s.shape_only, allow::Any{},
      "run on LibTorch's meta device: real sizes, no data (docs/runtime.md, \"Shape-only runs\"); the size budget is then the arithmetic's only, "
      "properties that need values are skipped, and only the threads backend runs it");
    v("schedule", s.schedule, allow::Any{},
      "threads backend: the order rank threads run in, one at a time, handed over at collective boundaries, with "
      "deadlines on the world's clock (docs/runtime.md, \"Deterministic schedules\"); absent: the canonical order");
  }
};


}  // namespace shardfuzz::harness
