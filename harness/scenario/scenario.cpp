// A Scenario's model paths, its size, and its validation: every rule names the JSON path of the
// first bad value, and the size budget is plain arithmetic, checked before anything is built.
#include "harness/scenario/scenario.h"

#include "harness/scenario/quoted.h"
#include "harness/scenario/codecs.hpp"
#include "runtime/semantics/profile.h"

#include <algorithm>
#include <cctype>
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

void validate_block(const Scenario& sc, const BlockSpec& b, std::size_t i) {
  const std::string path = "blocks[" + std::to_string(i) + "]";
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
  const bool shape_only = sc.shape_only.has_value();
  const int64_t bytes = sc.full_parameter_bytes();
  const int64_t max_bytes = shape_only ? ScenarioLimits::kMaxShapeOnlyBytes : ScenarioLimits::kMaxParameterBytes;
  if (bytes > max_bytes)
    reject("size budget", "parameters take " + std::to_string(bytes) + " bytes per rank before sharding, over the limit of " +
                              std::to_string(max_bytes) + (shape_only ? " (shape-only)" : " (a run with data; shape_only lifts it)"));
  const bool attention = std::any_of(sc.blocks.begin(), sc.blocks.end(), [](const BlockSpec& b) { return b.attention; });
  // Attention scores are [heads, tokens, tokens].
  const int64_t widest = std::max({sc.dims.dim, sat_mul(sc.dims.hidden, sc.dims.experts),
                                   attention ? sat_mul(sc.dims.tokens, sc.dims.heads) : int64_t{0}});
  const int64_t activations = sat_mul(sc.dims.tokens, widest);
  const int64_t max_activations = shape_only ? ScenarioLimits::kMaxShapeOnlyBytes : ScenarioLimits::kMaxActivationElements;
  if (activations > max_activations)
    reject("size budget", "activations take tokens x max(dim, hidden x experts, tokens x heads with attention) = " + std::to_string(activations) +
                              " elements, over the limit of " + std::to_string(max_activations) +
                              (shape_only ? " (shape-only)" : " (a run with data; shape_only lifts it)"));
}

// A shape-only run holds no values: a fault that plants one cannot be observed.
void validate_shape_only(const Scenario& sc) {
  if (!sc.shape_only) {
    if (sc.dims.tokens > ScenarioLimits::kMaxDim)
      reject("dims.tokens", std::to_string(sc.dims.tokens) + " outside [1, " + std::to_string(ScenarioLimits::kMaxDim) +
                                "] for a run with data (set shape_only for more)");
    return;
  }
  if (!std::isfinite(sc.shape_only->routing_skew) || sc.shape_only->routing_skew > 16)
    reject("shape_only.routing_skew", std::to_string(sc.shape_only->routing_skew) + " outside [0, 16]");
  for (std::size_t i = 0; i < sc.faults.size(); ++i)
    if (sc.faults[i].is_nonfinite())
      reject("faults[" + std::to_string(i) + "].kind",
             "a nan or inf gradient needs values; a shape_only scenario holds none");
}

void validate_reshard(const std::string& path, const fsdp::ReshardAfterForward& raf, int group) {
  if (raf.kind != fsdp::ReshardAfterForward::Kind::Int) return;
  if (group % raf.n != 0)
    reject(path, std::to_string(raf.n) + " does not divide the shard group size " + std::to_string(group));
}

void validate_shard_dim(const Scenario& sc, const std::string& module, const ShardSpec& spec, int group) {
  const std::string path = shard_path(module) + ".shard_dim";
  if (spec.shard_dim == 0) return;
  if (!sc.block_of_experts(module))
    reject(path, "Shard(" + std::to_string(spec.shard_dim) +
                     ") is only supported on expert modules (layers.i.moe.experts, whose weights have 3 dims)");
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

const std::vector<std::string>& mesh_names() {
  static const std::vector<std::string> names = {"dp", "experts"};
  return names;
}

std::optional<std::pair<std::size_t, std::string>> split_block_path(const std::string& path) {
  static const std::string prefix = "layers.";
  if (path.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  std::size_t end = prefix.size();
  while (end < path.size() && std::isdigit(static_cast<unsigned char>(path[end]))) ++end;
  if (end == prefix.size()) return std::nullopt;
  if (end < path.size() && path[end] != '.') return std::nullopt;
  return std::make_pair(static_cast<std::size_t>(std::stoul(path.substr(prefix.size(), end - prefix.size()))),
                        path.substr(end));
}

const std::vector<std::string>& loss_names() {
  static const std::vector<std::string> names = {"mean", "sum"};
  return names;
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

void validate_fault(const Scenario& sc, const FaultSpec& f, const std::string& path) {
  check_range(path + ".rank", f.rank, 0, sc.world_size - 1);
  if (const auto* c = f.at_collective()) {
    if (!is_named(c->kind)) reject(path + ".kind", "unknown fault kind (" + join(fault_kinds()) + ")");
    check_range(path + ".collective", c->collective, 0, ScenarioLimits::kMaxFaultCollective);
    if (c->kind == CollectiveFault::Kind::Straggler)
      check_range(path + ".delay_ms", c->delay_ms, 1, ScenarioLimits::kMaxStragglerMs);
    else if (c->delay_ms != 0)
      reject(path + ".delay_ms", std::to_string(c->delay_ms) + ": only a straggler has a delay");
  } else if (const auto* m = f.in_module()) {
    if (!is_named(m->kind)) reject(path + ".kind", "unknown fault kind (" + join(fault_kinds()) + ")");
    const auto paths = sc.module_paths();
    if (std::find(paths.begin(), paths.end(), m->module) == paths.end())
      reject(path + ".module", quoted(m->module) + ": no such module");
    check_range(path + ".step", m->step, 0, sc.steps - 1);
    if (!is_named(m->pass)) reject(path + ".pass", "unknown pass (forward, backward)");
  } else if (const auto* a = f.in_allocator()) {
    if (const auto* at = std::get_if<AllocationFault::AtAllocation>(&a->trigger))
      check_range(path + ".allocation", at->index, 0, ScenarioLimits::kMaxFaultAllocation);
    else
      check_range(path + ".limit_bytes", std::get<AllocationFault::AboveBytes>(a->trigger).limit, 1,
                  ScenarioLimits::kMaxFaultLimitBytes);
  }
}

// The world, the experts mesh and the dims they constrain.
void validate_meshes(const Scenario& sc) {
  if (sc.expert_shard_size > 0 && sc.world_size % sc.expert_shard_size != 0)
    reject("expert_shard_size", std::to_string(sc.expert_shard_size) + " does not divide world_size " +
                                    std::to_string(sc.world_size));
  for (std::size_t i = 0; i < sc.blocks.size(); ++i)
    if (sc.blocks[i].attention && sc.dims.dim % sc.dims.heads != 0)
      reject("dims.heads", std::to_string(sc.dims.heads) + " does not divide dims.dim " + std::to_string(sc.dims.dim) +
                               " (block " + std::to_string(i) + " has attention)");
  if (!sc.expert_parallel) return;
  if (sc.expert_shard_size == 0) reject("expert_parallel", "needs expert_shard_size > 0 (ep = world_size / expert_shard_size)");
  const int ep = sc.expert_parallel_degree();
  if (sc.dims.experts % ep != 0)
    reject("expert_parallel", "dims.experts " + std::to_string(sc.dims.experts) + " is not divisible by ep = " +
                                  std::to_string(ep) + " (world_size / expert_shard_size)");
}

// Under expert parallelism every routed block's experts sit on the "experts" mesh, and nothing else does.
void validate_expert_placements(const Scenario& sc) {
  if (!sc.expert_parallel) return;
  for (std::size_t i = 0; i < sc.blocks.size(); ++i) {
    if (sc.blocks[i].kind != BlockSpec::Kind::RoutedMoe) continue;
    const std::string experts = "layers." + std::to_string(i) + ".moe.experts";
    auto it = sc.fully_shard.find(experts);
    if (it == sc.fully_shard.end() || it->second.mesh != "experts")
      reject(shard_path(experts), "expert_parallel: the experts of routed MoE block " + std::to_string(i) +
                                      " hold this rank's experts only and must be fully_shard-ed on the \"experts\" mesh");
  }
  for (const auto& [module, spec] : sc.fully_shard)
    if (spec.mesh == "experts" && !sc.is_routed_experts(module))
      reject(shard_path(module) + ".mesh", "expert_parallel: the \"experts\" mesh is the 1-D dp_mod_ep mesh of EP-local "
                                           "experts; only the experts of routed MoE blocks may use it");
}

void validate_placements(const Scenario& sc) {
  const std::vector<std::string> modules = sc.module_paths();
  const std::set<std::string> known(modules.begin(), modules.end());
  for (const auto& [module, spec] : sc.fully_shard)
    if (!known.count(module))
      reject(shard_path(module), "no such module (the model has " + std::to_string(sc.blocks.size()) + " blocks)");
  if (!sc.fully_shard.count("")) reject("fully_shard", "the root (\"\") must be fully_shard-ed");
  validate_expert_placements(sc);
  for (const auto& [module, spec] : sc.fully_shard) {
    const std::string path = shard_path(module);
    const int group = shard_group_size(sc, spec);
    validate_reshard(path + ".reshard_after_forward", spec.reshard_after_forward, group);
    validate_shard_dim(sc, module, spec, group);
    validate_prefetch(sc, known, path + ".forward_prefetch", spec.forward_prefetch);
    validate_prefetch(sc, known, path + ".backward_prefetch", spec.backward_prefetch);
  }
}

}  // namespace

void Scenario::validate() const {
  if (schema != kScenarioSchema)
    reject("schema", std::to_string(schema) + " is not supported (this build reads schema " +
                         std::to_string(kScenarioSchema) + ")");
  fields_detail::check_record(*this, "");  // every field's own range, in the field list's order
  validate_meshes(*this);
  for (std::size_t i = 0; i < blocks.size(); ++i) validate_block(*this, blocks[i], i);
  for (std::size_t i = 0; i < faults.size(); ++i) validate_fault(*this, faults[i], "faults[" + std::to_string(i) + "]");
  validate_shape_only(*this);
  validate_budget(*this);
  validate_placements(*this);
}

}  // namespace shardfuzz::harness
