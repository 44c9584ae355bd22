// A Scenario's model paths, its size, and its validation: every rule names the JSON path of the
// first bad value, and the size budget is plain arithmetic, checked before anything is built.
#include "harness/scenario.h"

#include "harness/quoted.h"
#include "runtime/fsdp/profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

namespace shardfuzz::harness {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Saturating arithmetic on non-negative sizes: an unvalidated scenario can hold any int64 dims,
// and full_parameter_bytes() must still answer (with "at least INT64_MAX") instead of overflowing.
int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? kInt64Max : r;
}
int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kInt64Max : r;
}
int64_t linear_params(int64_t in, int64_t out) { return sat_add(sat_mul(in, out), out); }


std::string shard_path(const std::string& module) { return "fully_shard[" + quoted(module) + "]"; }

std::string show(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

[[noreturn]] void reject(const std::string& path, const std::string& what) {
  throw std::invalid_argument(path + ": " + what);
}

void check_range(const std::string& path, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi)
    reject(path, std::to_string(v) + " outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

// Ranks a placement's parameters are sharded over: the whole world for "dp"; for "experts", the
// dp_mod_ep dim of the HSDP experts mesh (the world when expert_shard_size is 0).
int shard_group_size(const Scenario& sc, const ShardSpec& spec) {
  if (spec.mesh == "experts" && sc.expert_shard_size > 0) return sc.expert_shard_size;
  return sc.world_size;
}

void validate_optimizer(const train::OptimizerConfig& o) {
  if (o.kind != train::OptimizerConfig::Kind::Sgd && o.kind != train::OptimizerConfig::Kind::AdamW)
    reject("optimizer.kind", "unknown optimizer kind (sgd, adamw)");
  if (!std::isfinite(o.lr) || !(o.lr > 0)) reject("optimizer.lr", show(o.lr) + " must be finite and > 0");
  if (!(o.beta1 >= 0 && o.beta1 < 1)) reject("optimizer.beta1", show(o.beta1) + " outside [0, 1)");
  if (!(o.beta2 >= 0 && o.beta2 < 1)) reject("optimizer.beta2", show(o.beta2) + " outside [0, 1)");
  if (!std::isfinite(o.eps) || !(o.eps > 0)) reject("optimizer.eps", show(o.eps) + " must be finite and > 0");
  if (!std::isfinite(o.weight_decay) || !(o.weight_decay >= 0))
    reject("optimizer.weight_decay", show(o.weight_decay) + " must be finite and >= 0");
}

void validate_block(const Scenario& sc, const BlockSpec& b, std::size_t i) {
  const std::string path = "blocks[" + std::to_string(i) + "]";
  if (b.kind != BlockSpec::Kind::Moe && b.kind != BlockSpec::Kind::Mlp && b.kind != BlockSpec::Kind::RoutedMoe)
    reject(path + ".kind", "unknown block kind (moe, routed_moe, mlp)");
  if (b.ac != ac::CheckpointMode::None && b.ac != ac::CheckpointMode::NonReentrant &&
      b.ac != ac::CheckpointMode::Reentrant && b.ac != ac::CheckpointMode::SelectiveOps)
    reject(path + ".ac", "unknown checkpoint mode (none, non_reentrant, reentrant, selective_ops)");
  const std::vector<std::string> linears = b.linear_paths();
  std::set<std::string> seen;
  for (std::size_t k = 0; k < b.lora.size(); ++k) {
    const std::string where = path + ".lora[" + std::to_string(k) + "]";
    if (std::find(linears.begin(), linears.end(), b.lora[k]) == linears.end()) {
      std::string list;
      for (const auto& l : linears) list += (list.empty() ? "" : ", ") + l;
      reject(where, quoted(b.lora[k]) + " is no linear of this block (" + list + ")");
    }
    if (!seen.insert(b.lora[k]).second) reject(where, quoted(b.lora[k]) + " is listed twice");
    const int64_t widest = BlockSpec::linear_min_features(b.lora[k], sc.dims);
    if (sc.dims.lora_rank > widest)
      reject("dims.lora_rank", std::to_string(sc.dims.lora_rank) + " exceeds min(in, out) = " + std::to_string(widest) +
                                   " of " + where + " " + quoted(b.lora[k]));
  }
  if (b.kind == BlockSpec::Kind::RoutedMoe && (sc.dims.top_k < 1 || sc.dims.top_k > sc.dims.experts))
    reject("dims.top_k", std::to_string(sc.dims.top_k) + " outside [1, dims.experts = " +
                             std::to_string(sc.dims.experts) + "] (block " + std::to_string(i) + " is a routed MoE)");
}

void validate_budget(const Scenario& sc) {
  const int64_t bytes = sc.full_parameter_bytes();
  if (bytes > ScenarioLimits::kMaxParameterBytes)
    reject("size budget", "parameters take " + std::to_string(bytes) + " bytes per rank before sharding, over the limit of " +
                              std::to_string(ScenarioLimits::kMaxParameterBytes));
  // dims are validated (<= 2^16 each), so this product cannot overflow.
  const bool attention = std::any_of(sc.blocks.begin(), sc.blocks.end(), [](const BlockSpec& b) { return b.attention; });
  // Attention scores are [heads, tokens, tokens].
  const int64_t widest = std::max({sc.dims.dim, sc.dims.hidden * sc.dims.experts,
                                   attention ? sc.dims.tokens * sc.dims.heads : int64_t{0}});
  const int64_t activations = sc.dims.tokens * widest;
  if (activations > ScenarioLimits::kMaxActivationElements)
    reject("size budget", "activations take tokens x max(dim, hidden x experts, tokens x heads with attention) = " + std::to_string(activations) +
                              " elements, over the limit of " + std::to_string(ScenarioLimits::kMaxActivationElements));
}

void validate_reshard(const std::string& path, const fsdp::ReshardAfterForward& raf, int group) {
  using Kind = fsdp::ReshardAfterForward::Kind;
  if (raf.kind != Kind::Auto && raf.kind != Kind::True && raf.kind != Kind::False && raf.kind != Kind::Int)
    reject(path, "unknown kind (\"auto\", true, false or an integer)");
  if (raf.kind != Kind::Int) return;
  if (raf.n < 1) reject(path, std::to_string(raf.n) + " must be at least 1");
  if (group % raf.n != 0)
    reject(path, std::to_string(raf.n) + " does not divide the shard group size " + std::to_string(group));
}

void validate_shard_dim(const Scenario& sc, const std::string& module, const ShardSpec& spec, int group) {
  const std::string path = shard_path(module) + ".shard_dim";
  if (spec.shard_dim < 0) reject(path, std::to_string(spec.shard_dim) + " must be >= 0");
  if (spec.shard_dim == 0) return;
  if (!sc.block_of_experts(module))
    reject(path, "Shard(" + std::to_string(spec.shard_dim) +
                     ") is only supported on expert modules (layers.i.moe.experts, whose weights have 3 dims)");
  if (spec.shard_dim > 2) reject(path, std::to_string(spec.shard_dim) + " outside [0, 2] (expert weights have 3 dims)");
  // w1 is [E, D, H] and w2 is [E, H, D]: Shard(1) and Shard(2) each cut one D and one H.
  if (sc.dims.dim % group != 0 || sc.dims.hidden % group != 0)
    reject(path, "Shard(" + std::to_string(spec.shard_dim) + ") needs dims.dim " + std::to_string(sc.dims.dim) +
                     " and dims.hidden " + std::to_string(sc.dims.hidden) + " divisible by the shard group size " +
                     std::to_string(group));
}

void validate_prefetch(const Scenario& sc, const std::set<std::string>& known, const std::string& path,
                       const std::optional<std::vector<std::string>>& list) {
  if (!list) return;
  for (std::size_t k = 0; k < list->size(); ++k) {
    const std::string& entry = (*list)[k];
    const std::string where = path + "[" + std::to_string(k) + "]";
    if (entry == "self") continue;
    if (!known.count(entry)) reject(where, quoted(entry) + " is no module of the model");
    if (!sc.fully_shard.count(entry)) reject(where, quoted(entry) + " is not fully_shard-ed");
  }
}

}  // namespace

std::vector<std::string> BlockSpec::linear_paths() const {
  std::vector<std::string> out;
  if (attention)
    out.insert(out.end(), {"attn.q", "attn.k", "attn.v", "attn.o"});
  else
    out.push_back("attn");
  if (has_router()) out.push_back("moe.router");
  if (kind == Kind::Mlp) out.insert(out.end(), {"mlp.fc1", "mlp.fc2"});
  return out;
}

int64_t BlockSpec::linear_min_features(const std::string& path, const Dims& dims) {
  if (path == "moe.router") return std::min(dims.dim, dims.experts);
  if (path == "mlp.fc1" || path == "mlp.fc2") return std::min(dims.dim, dims.hidden);
  return dims.dim;  // attn, attn.q/k/v/o: dim -> dim
}

std::vector<std::string> Scenario::module_paths() const {
  std::vector<std::string> out = {""};
  if (embed) out.push_back("embed");
  out.push_back("layers");
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const BlockSpec& b = blocks[i];
    const std::string block = "layers." + std::to_string(i);
    out.push_back(block);
    if (b.norm) out.push_back(block + ".norm1");
    out.push_back(block + ".attn");
    if (b.attention)
      for (const char* p : {".attn.q", ".attn.k", ".attn.v", ".attn.o"}) out.push_back(block + p);
    if (b.norm) out.push_back(block + ".norm2");
    if (b.has_moe()) {
      out.push_back(block + ".moe");
      out.push_back(block + ".moe.experts");
      if (b.has_router()) out.push_back(block + ".moe.router");
    } else {
      out.push_back(block + ".mlp");
      out.push_back(block + ".mlp.fc1");
      out.push_back(block + ".mlp.fc2");
    }
  }
  if (final_norm) out.push_back("norm");
  out.push_back("out");
  return out;
}

const BlockSpec* Scenario::block_of_experts(const std::string& path) const {
  for (std::size_t i = 0; i < blocks.size(); ++i)
    if (blocks[i].has_moe() && path == "layers." + std::to_string(i) + ".moe.experts") return &blocks[i];
  return nullptr;
}

bool Scenario::is_routed_experts(const std::string& path) const {
  const BlockSpec* b = block_of_experts(path);
  return b && b->kind == BlockSpec::Kind::RoutedMoe;
}

int Scenario::expert_parallel_degree() const {
  if (!expert_parallel || expert_shard_size <= 0) return 1;
  return world_size / expert_shard_size;
}

const std::vector<std::string>& fault_kinds() {
  static const std::vector<std::string> kinds = {"straggler", "collective_error", "hang", "crash",
                                                  "exception", "nan",       "inf",  "oom",   "abort"};
  return kinds;
}

const std::vector<std::string>& dtype_names() {
  static const std::vector<std::string> names = {"float32", "bfloat16"};
  return names;
}

c10::ScalarType scalar_type_of(const std::string& name, const std::string& path) {
  if (name == "float32") return c10::ScalarType::Float;
  if (name == "bfloat16") return c10::ScalarType::BFloat16;
  reject(path, quoted(name) + " is not a dtype (float32, bfloat16)");
}

std::string dtype_name(c10::ScalarType type) {
  for (const std::string& name : dtype_names())
    if (scalar_type_of(name) == type) return name;
  return c10::toString(type);
}

fsdp::MixedPrecisionPolicy Scenario::mp_policy() const {
  fsdp::MixedPrecisionPolicy mp;
  if (!mixed_precision) return mp;
  mp.param_dtype = scalar_type_of(mixed_precision->param_dtype, "mixed_precision.param_dtype");
  if (mixed_precision->reduce_dtype)
    mp.reduce_dtype = scalar_type_of(*mixed_precision->reduce_dtype, "mixed_precision.reduce_dtype");
  return mp;
}

c10::ScalarType Scenario::compute_dtype() const {
  return mixed_precision ? scalar_type_of(mixed_precision->param_dtype, "mixed_precision.param_dtype")
                         : scalar_type_of(dtype);
}

c10::ScalarType Scenario::stored_dtype(bool requires_grad) const {
  const c10::ScalarType model = scalar_type_of(dtype);
  return mixed_precision && mixed_precision->upcast_trainable && requires_grad ? c10::ScalarType::Float : model;
}

int64_t Scenario::full_parameter_bytes() const {
  const int64_t d = dims.dim, h = dims.hidden, e = dims.experts, r = dims.lora_rank;
  const int64_t experts = sat_mul(2, sat_mul(e, sat_mul(d, h)));
  const int64_t router = linear_params(d, e);
  const int64_t mlp = sat_add(linear_params(d, h), linear_params(h, d));
  const int64_t adapter = sat_mul(r, sat_add(d, sat_add(h, e)));  // a bound: r x (in + out)
  int64_t params = linear_params(d, d);                           // out
  if (embed) params = sat_add(params, sat_mul(dims.vocab, d));
  if (final_norm) params = sat_add(params, d);
  for (const BlockSpec& b : blocks) {
    int64_t block = b.attention ? sat_mul(4, sat_mul(d, d)) : linear_params(d, d);
    if (b.norm) block = sat_add(block, sat_mul(2, d));
    if (b.has_moe())
      block = sat_add(block, b.has_router() ? sat_add(experts, router) : experts);
    else
      block = sat_add(block, mlp);
    block = sat_add(block, sat_mul(static_cast<int64_t>(b.lora.size()), adapter));
    params = sat_add(params, block);
  }
  // As stored: bfloat16 models take 2 bytes a parameter, unless mixed precision upcasts the
  // trainable ones to float32 (counted as if all were: a bound).
  const int64_t element = stored_dtype(/*requires_grad=*/true) == c10::ScalarType::Float ? 4 : 2;
  return sat_mul(params, element);
}

namespace {

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

void validate_faults(const Scenario& sc) {
  if (sc.faults.size() > static_cast<std::size_t>(ScenarioLimits::kMaxFaults))
    reject("faults", std::to_string(sc.faults.size()) + " faults, over the limit of " +
                         std::to_string(ScenarioLimits::kMaxFaults));
  for (std::size_t i = 0; i < sc.faults.size(); ++i) {
    const FaultSpec& f = sc.faults[i];
    const std::string path = "faults[" + std::to_string(i) + "]";
    const auto& kinds = fault_kinds();
    if (std::find(kinds.begin(), kinds.end(), f.kind) == kinds.end())
      reject(path + ".kind", quoted(f.kind) + " is not a fault kind (" + join(kinds) + ")");
    check_range(path + ".rank", f.rank, 0, sc.world_size - 1);
    check_range(path + ".collective", f.collective, 0, ScenarioLimits::kMaxFaultCollective);
    if (!f.is_collective() && f.collective != 0)
      reject(path + ".collective", std::string(f.kind == "exception" || f.kind == "inf" || f.kind == "oom" ? "an " : "a ") +
                                       f.kind + " fault fires " + (f.kind == "oom" ? "in the allocator" : "in a module") +
                                       ", not at a collective");
    if (f.is_in_module()) {
      const auto paths = sc.module_paths();
      if (std::find(paths.begin(), paths.end(), f.module) == paths.end())
        reject(path + ".module", quoted(f.module) + ": no such module");
      check_range(path + ".step", f.step, 0, sc.steps - 1);
    } else if (!f.module.empty() || f.step != 0) {
      reject(path + (f.module.empty() ? ".step" : ".module"),
             "only an exception, nan or inf fault names a module and a step");
    }
    if (f.kind == "exception") {
      if (f.pass != "forward" && f.pass != "backward")
        reject(path + ".pass", quoted(f.pass) + " is not a pass (\"forward\", \"backward\")");
    } else if (!f.pass.empty()) {
      reject(path + ".pass", "only an exception fault names a pass");
    }
    if (f.kind == "oom") {
      if ((f.allocation >= 0) == (f.limit_bytes > 0))
        reject(path + ".allocation", "an oom fault names either an allocation or limit_bytes (one of them)");
      if (f.allocation >= 0) check_range(path + ".allocation", f.allocation, 0, ScenarioLimits::kMaxFaultAllocation);
      else check_range(path + ".limit_bytes", f.limit_bytes, 1, ScenarioLimits::kMaxFaultLimitBytes);
    } else if (f.allocation != -1 || f.limit_bytes != 0) {
      reject(path + (f.allocation != -1 ? ".allocation" : ".limit_bytes"), "only an oom fault names an allocation or a limit");
    }
    if (f.kind == "straggler")
      check_range(path + ".delay_ms", f.delay_ms, 1, ScenarioLimits::kMaxStragglerMs);
    else if (f.delay_ms != 0)
      reject(path + ".delay_ms", std::to_string(f.delay_ms) + ": only a straggler has a delay");
  }
}

}  // namespace

void Scenario::validate() const {
  if (schema != kScenarioSchema)
    reject("schema", std::to_string(schema) + " is not supported (this build reads schema " +
                         std::to_string(kScenarioSchema) + ")");
  check_range("world_size", world_size, 1, ScenarioLimits::kMaxWorld);
  if (expert_shard_size < 0) reject("expert_shard_size", std::to_string(expert_shard_size) + " must be >= 0");
  if (expert_shard_size > 0 && world_size % expert_shard_size != 0)
    reject("expert_shard_size", std::to_string(expert_shard_size) + " does not divide world_size " + std::to_string(world_size));
  try {
    fsdp::Profile::named(profile);
  } catch (const std::invalid_argument& e) {
    reject("profile", e.what());
  }
  check_range("steps", steps, 1, ScenarioLimits::kMaxSteps);
  check_range("micro_batches", micro_batches, 1, ScenarioLimits::kMaxMicroBatches);
  check_range("forwards_per_backward", forwards_per_backward, 1, ScenarioLimits::kMaxForwardsPerBackward);
  check_range("dims.dim", dims.dim, 1, ScenarioLimits::kMaxDim);
  check_range("dims.hidden", dims.hidden, 1, ScenarioLimits::kMaxDim);
  check_range("dims.experts", dims.experts, 1, ScenarioLimits::kMaxDim);
  check_range("dims.tokens", dims.tokens, 1, ScenarioLimits::kMaxDim);
  check_range("dims.heads", dims.heads, 1, ScenarioLimits::kMaxDim);
  check_range("dims.top_k", dims.top_k, 1, ScenarioLimits::kMaxDim);
  check_range("dims.vocab", dims.vocab, 1, ScenarioLimits::kMaxDim);
  check_range("dims.lora_rank", dims.lora_rank, 1, 1024);
  if (!std::isfinite(dims.lora_alpha) || !(dims.lora_alpha > 0))
    reject("dims.lora_alpha", show(dims.lora_alpha) + " must be finite and > 0");
  for (std::size_t i = 0; i < blocks.size() && i < static_cast<std::size_t>(ScenarioLimits::kMaxBlocks); ++i)
    if (blocks[i].attention && dims.dim % dims.heads != 0)
      reject("dims.heads", std::to_string(dims.heads) + " does not divide dims.dim " + std::to_string(dims.dim) +
                               " (block " + std::to_string(i) + " has attention)");
  if (expert_parallel) {
    if (expert_shard_size == 0)
      reject("expert_parallel", "needs expert_shard_size > 0 (ep = world_size / expert_shard_size)");
    const int ep = expert_parallel_degree();
    if (expert_shard_size > 0 && world_size % expert_shard_size == 0 && dims.experts % ep != 0)
      reject("expert_parallel", "dims.experts " + std::to_string(dims.experts) + " is not divisible by ep = " +
                                    std::to_string(ep) + " (world_size / expert_shard_size)");
  }
  scalar_type_of(dtype, "dtype");
  if (mixed_precision) {
    scalar_type_of(mixed_precision->param_dtype, "mixed_precision.param_dtype");
    if (mixed_precision->reduce_dtype) scalar_type_of(*mixed_precision->reduce_dtype, "mixed_precision.reduce_dtype");
  }
  if (loss != "mean" && loss != "sum") reject("loss", quoted(loss) + " is not a loss (\"mean\" or \"sum\")");
  validate_optimizer(optimizer);
  if (blocks.size() > static_cast<std::size_t>(ScenarioLimits::kMaxBlocks))
    reject("blocks", std::to_string(blocks.size()) + " blocks, over the limit of " + std::to_string(ScenarioLimits::kMaxBlocks));
  for (std::size_t i = 0; i < blocks.size(); ++i) validate_block(*this, blocks[i], i);
  validate_faults(*this);
  validate_budget(*this);

  const std::vector<std::string> modules = module_paths();
  const std::set<std::string> known(modules.begin(), modules.end());
  for (const auto& [module, spec] : fully_shard)
    if (!known.count(module))
      reject(shard_path(module), "no such module (the model has " + std::to_string(blocks.size()) + " blocks)");
  if (!fully_shard.count("")) reject("fully_shard", "the root (\"\") must be fully_shard-ed");
  if (expert_parallel)
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (blocks[i].kind != BlockSpec::Kind::RoutedMoe) continue;
      const std::string experts = "layers." + std::to_string(i) + ".moe.experts";
      auto it = fully_shard.find(experts);
      if (it == fully_shard.end() || it->second.mesh != "experts")
        reject(shard_path(experts), "expert_parallel: the experts of routed MoE block " + std::to_string(i) +
                                        " hold this rank's experts only and must be fully_shard-ed on the \"experts\" mesh");
    }
  for (const auto& [module, spec] : fully_shard) {
    const std::string path = shard_path(module);
    if (spec.mesh != "dp" && spec.mesh != "experts")
      reject(path + ".mesh", quoted(spec.mesh) + " is not a mesh (dp, experts)");
    if (expert_parallel && spec.mesh == "experts" && !is_routed_experts(module))
      reject(path + ".mesh", "expert_parallel: the \"experts\" mesh is the 1-D dp_mod_ep mesh of EP-local experts; "
                             "only the experts of routed MoE blocks may use it");
    const int group = shard_group_size(*this, spec);
    validate_reshard(path + ".reshard_after_forward", spec.reshard_after_forward, group);
    validate_shard_dim(*this, module, spec, group);
    validate_prefetch(*this, known, path + ".forward_prefetch", spec.forward_prefetch);
    validate_prefetch(*this, known, path + ".backward_prefetch", spec.backward_prefetch);
  }
}

}  // namespace shardfuzz::harness
