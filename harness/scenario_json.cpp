// Scenario <-> JSON. The reader never trusts its input: it checks each value's type before reading
// it, names the JSON path of what it rejects, never dumps a whole (possibly huge or deep) value
// into a message, and leaves the size budget to Scenario::validate, which runs before anything is
// built.
#include "harness/scenario_json.h"

#include "harness/quoted.h"

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include <sys/stat.h>

namespace shardfuzz::harness {

const char* block_kind_name(BlockSpec::Kind k) {
  switch (k) {
    case BlockSpec::Kind::Moe: return "moe";
    case BlockSpec::Kind::Mlp: return "mlp";
    case BlockSpec::Kind::RoutedMoe: return "routed_moe";
  }
  return "?";
}

namespace {

using nlohmann::json;

// ---- writing ----------------------------------------------------------------------------------

const char* optimizer_kind_name(train::OptimizerConfig::Kind k) {
  switch (k) {
    case train::OptimizerConfig::Kind::Sgd: return "sgd";
    case train::OptimizerConfig::Kind::AdamW: return "adamw";
  }
  return "?";
}

template <class Json>
Json reshard_to_json(const fsdp::ReshardAfterForward& raf) {
  using Kind = fsdp::ReshardAfterForward::Kind;
  switch (raf.kind) {
    case Kind::Auto: return "auto";
    case Kind::True: return true;
    case Kind::False: return false;
    case Kind::Int: return raf.n;
  }
  return "?";
}

// Templated so that to_json (sorted keys) and to_json_text ("schema" first, insertion order) share
// one field list.
template <class Json>
Json build(const Scenario& s) {
  Json j = Json::object();
  j["schema"] = s.schema;
  j["name"] = s.name;
  j["seed"] = s.seed;
  j["world_size"] = s.world_size;
  j["expert_shard_size"] = s.expert_shard_size;
  j["profile"] = s.profile;
  j["steps"] = s.steps;
  Json dims = Json::object();
  dims["dim"] = s.dims.dim;
  dims["hidden"] = s.dims.hidden;
  dims["experts"] = s.dims.experts;
  dims["tokens"] = s.dims.tokens;
  dims["heads"] = s.dims.heads;
  dims["top_k"] = s.dims.top_k;
  dims["vocab"] = s.dims.vocab;
  dims["lora_rank"] = s.dims.lora_rank;
  dims["lora_alpha"] = s.dims.lora_alpha;
  j["dims"] = std::move(dims);
  j["dtype"] = s.dtype;
  if (s.mixed_precision) {
    Json mp = Json::object();
    mp["param_dtype"] = s.mixed_precision->param_dtype;
    if (s.mixed_precision->reduce_dtype) mp["reduce_dtype"] = *s.mixed_precision->reduce_dtype;
    mp["upcast_trainable"] = s.mixed_precision->upcast_trainable;
    j["mixed_precision"] = std::move(mp);
  }
  j["loss"] = s.loss;
  Json opt = Json::object();
  opt["kind"] = optimizer_kind_name(s.optimizer.kind);
  opt["lr"] = s.optimizer.lr;
  opt["beta1"] = s.optimizer.beta1;
  opt["beta2"] = s.optimizer.beta2;
  opt["eps"] = s.optimizer.eps;
  opt["weight_decay"] = s.optimizer.weight_decay;
  j["optimizer"] = std::move(opt);
  j["input_requires_grad"] = s.input_requires_grad;
  j["input_per_rank"] = s.input_per_rank;
  j["embed"] = s.embed;
  j["final_norm"] = s.final_norm;
  j["expert_parallel"] = s.expert_parallel;
  j["micro_batches"] = s.micro_batches;
  j["forwards_per_backward"] = s.forwards_per_backward;
  j["eval_forward"] = s.eval_forward;
  Json blocks = Json::array();
  for (const BlockSpec& b : s.blocks) {
    Json block = Json::object();
    block["kind"] = block_kind_name(b.kind);
    block["gated"] = b.gated;
    block["ac"] = ac::to_string(b.ac);
    block["ac_wraps_hooks"] = b.ac_wraps_hooks;
    block["frozen"] = b.frozen;
    block["attention"] = b.attention;
    block["norm"] = b.norm;
    block["no_grad"] = b.no_grad;
    block["lora"] = b.lora;
    blocks.push_back(std::move(block));
  }
  j["blocks"] = std::move(blocks);
  Json placements = Json::object();
  for (const auto& [path, spec] : s.fully_shard) {
    Json p = Json::object();
    p["reshard_after_forward"] = reshard_to_json<Json>(spec.reshard_after_forward);
    p["shard_dim"] = spec.shard_dim;
    p["mesh"] = spec.mesh;
    if (spec.forward_prefetch) p["forward_prefetch"] = *spec.forward_prefetch;
    if (spec.backward_prefetch) p["backward_prefetch"] = *spec.backward_prefetch;
    placements[path] = std::move(p);
  }
  j["fully_shard"] = std::move(placements);
  if (!s.faults.empty()) {  // written only when planned: fault-free files stay as they were
    Json faults = Json::array();
    for (const FaultSpec& f : s.faults) {
      Json fault = Json::object();
      fault["kind"] = f.kind;
      fault["rank"] = f.rank;
      if (f.is_collective()) fault["collective"] = f.collective;
      if (f.kind == "straggler") fault["delay_ms"] = f.delay_ms;
      if (f.is_in_module()) {
        fault["module"] = f.module;
        if (f.kind == "exception") fault["pass"] = f.pass;
        fault["step"] = f.step;
      }
      if (f.kind == "oom") {
        if (f.allocation >= 0) fault["allocation"] = f.allocation;
        if (f.limit_bytes > 0) fault["limit_bytes"] = f.limit_bytes;
      }
      faults.push_back(std::move(fault));
    }
    j["faults"] = std::move(faults);
  }
  return j;
}

// ---- paths and messages -----------------------------------------------------------------------


bool is_identifier(const std::string& key) {
  if (key.empty() || key.size() > 64) return false;
  for (std::size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// `world_size`, `dims.dim`, `blocks[1].gated`, `fully_shard["layers.0"].mesh`: fully_shard's keys
// are module paths, always bracketed (as are keys that are no identifier).
std::string member_path(const std::string& parent, const std::string& key) {
  if (parent != "fully_shard" && is_identifier(key)) return parent.empty() ? key : parent + "." + key;
  return parent + "[" + quoted(key) + "]";
}

std::string element_path(const std::string& parent, std::size_t i) { return parent + "[" + std::to_string(i) + "]"; }

std::string where(const std::string& path) { return path.empty() ? "scenario" : path; }

[[noreturn]] void reject(const std::string& path, const std::string& what) {
  throw std::invalid_argument(where(path) + ": " + what);
}

// What a value is, for "expected X, got Y": scalars with their value, containers by kind only.
std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "the number " + v.dump();
    case json::value_t::string: return "the string " + quoted(v.get_ref<const std::string&>());
    case json::value_t::array: return "an array of " + std::to_string(v.size());
    case json::value_t::object: return "an object";
    default: return "a binary value";
  }
}

[[noreturn]] void wrong_type(const std::string& path, const char* expected, const json& v) {
  reject(path, std::string("expected ") + expected + ", got " + describe(v));
}

// ---- reading ----------------------------------------------------------------------------------

// One JSON object being read: rejects keys it does not know, hands out members by name.
class Fields {
 public:
  Fields(const json& j, std::string path, std::initializer_list<const char*> known) : j_(j), path_(std::move(path)) {
    if (!j.is_object()) wrong_type(path_, "an object", j);
    for (const auto& [key, value] : j.items()) {
      bool ok = false;
      for (const char* k : known) ok = ok || key == k;
      if (!ok) {
        std::string list;
        for (const char* k : known) list += std::string(list.empty() ? "" : ", ") + k;
        reject(member_path(path_, key), "unknown key (expected one of " + list + ")");
      }
    }
  }
  const json* get(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  std::string path(const char* key) const { return member_path(path_, key); }

 private:
  const json& j_;
  std::string path_;
};

int64_t read_int64(const json& v, const std::string& path) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      reject(path, std::to_string(u) + " is out of range for a signed 64-bit integer");
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  wrong_type(path, "an integer", v);
}

int read_int(const json& v, const std::string& path) {
  const int64_t n = read_int64(v, path);
  if (n < INT_MIN || n > INT_MAX) reject(path, std::to_string(n) + " is out of range for a 32-bit integer");
  return static_cast<int>(n);
}

uint64_t read_uint64(const json& v, const std::string& path) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) {
    const int64_t n = v.get<int64_t>();
    if (n < 0) reject(path, std::to_string(n) + " is negative (expected an unsigned 64-bit integer)");
    return static_cast<uint64_t>(n);
  }
  wrong_type(path, "an unsigned 64-bit integer", v);
}

double read_double(const json& v, const std::string& path) {
  if (!v.is_number()) wrong_type(path, "a number", v);
  return v.get<double>();
}

bool read_bool(const json& v, const std::string& path) {
  if (!v.is_boolean()) wrong_type(path, "true or false", v);
  return v.get<bool>();
}

const std::string& read_string(const json& v, const std::string& path) {
  if (!v.is_string()) wrong_type(path, "a string", v);
  return v.get_ref<const std::string&>();
}

std::vector<std::string> read_string_list(const json& v, const std::string& path) {
  if (!v.is_array()) wrong_type(path, "an array of strings", v);
  std::vector<std::string> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out.push_back(read_string(v[i], element_path(path, i)));
  return out;
}

// Reads `key` into `field` with `read` when present; absent keys keep the struct's default.
template <class T, class Read>
void optional_field(const Fields& f, const char* key, T& field, Read read) {
  if (const json* v = f.get(key)) field = read(*v, f.path(key));
}

fsdp::ReshardAfterForward read_reshard(const json& v, const std::string& path) {
  if (v.is_boolean()) return v.get<bool>() ? fsdp::ReshardAfterForward::yes() : fsdp::ReshardAfterForward::no();
  if (v.is_string()) {
    if (v.get_ref<const std::string&>() == "auto") return fsdp::ReshardAfterForward::automatic();
    reject(path, quoted(v.get_ref<const std::string&>()) + " is not a reshard_after_forward value (\"auto\", true, false or an integer)");
  }
  if (v.is_number_integer()) return fsdp::ReshardAfterForward::ranks(read_int(v, path));
  wrong_type(path, "\"auto\", true, false or an integer", v);
}

BlockSpec read_block(const json& v, const std::string& path) {
  const Fields f(v, path, {"kind", "gated", "ac", "ac_wraps_hooks", "frozen", "attention", "norm", "no_grad", "lora"});
  BlockSpec b;
  if (const json* k = f.get("kind")) {
    const std::string& name = read_string(*k, f.path("kind"));
    if (name == "moe")
      b.kind = BlockSpec::Kind::Moe;
    else if (name == "mlp")
      b.kind = BlockSpec::Kind::Mlp;
    else if (name == "routed_moe")
      b.kind = BlockSpec::Kind::RoutedMoe;
    else
      reject(f.path("kind"), quoted(name) + " is not a block kind (moe, routed_moe, mlp)");
  }
  optional_field(f, "gated", b.gated, read_bool);
  if (const json* a = f.get("ac")) {
    const std::string& name = read_string(*a, f.path("ac"));
    try {
      b.ac = ac::checkpoint_mode_from_string(name);
    } catch (const std::invalid_argument&) {
      reject(f.path("ac"), quoted(name) + " is not a checkpoint mode (none, non_reentrant, reentrant, selective_ops)");
    }
  }
  optional_field(f, "ac_wraps_hooks", b.ac_wraps_hooks, read_bool);
  optional_field(f, "frozen", b.frozen, read_bool);
  optional_field(f, "attention", b.attention, read_bool);
  optional_field(f, "norm", b.norm, read_bool);
  optional_field(f, "no_grad", b.no_grad, read_bool);
  optional_field(f, "lora", b.lora, read_string_list);
  return b;
}

ShardSpec read_shard_spec(const json& v, const std::string& path) {
  const Fields f(v, path, {"reshard_after_forward", "shard_dim", "mesh", "forward_prefetch", "backward_prefetch"});
  ShardSpec s;
  optional_field(f, "reshard_after_forward", s.reshard_after_forward, read_reshard);
  optional_field(f, "shard_dim", s.shard_dim, read_int);
  optional_field(f, "mesh", s.mesh, read_string);
  if (const json* l = f.get("forward_prefetch")) s.forward_prefetch = read_string_list(*l, f.path("forward_prefetch"));
  if (const json* l = f.get("backward_prefetch")) s.backward_prefetch = read_string_list(*l, f.path("backward_prefetch"));
  return s;
}

Scenario read_scenario(const json& j) {
  if (!j.is_object()) wrong_type("", "an object", j);
  // The schema first: a newer file's new keys should say "schema 2", not "unknown key".
  const auto schema = j.find("schema");
  if (schema == j.end()) reject("schema", "missing (required; this build reads schema " + std::to_string(kScenarioSchema) + ")");
  Scenario s;
  s.schema = read_int(*schema, "schema");
  if (s.schema != kScenarioSchema)
    reject("schema", std::to_string(s.schema) + " is not supported (this build reads schema " +
                         std::to_string(kScenarioSchema) + ")");

  const Fields f(j, "", {"schema", "name", "seed", "world_size", "expert_shard_size", "profile", "steps", "dims", "dtype",
                         "mixed_precision", "loss", "optimizer", "input_requires_grad", "input_per_rank", "embed", "final_norm",
                         "expert_parallel", "micro_batches", "forwards_per_backward", "eval_forward", "blocks",
                         "fully_shard", "faults"});
  optional_field(f, "name", s.name, read_string);
  optional_field(f, "seed", s.seed, read_uint64);
  optional_field(f, "world_size", s.world_size, read_int);
  optional_field(f, "expert_shard_size", s.expert_shard_size, read_int);
  optional_field(f, "profile", s.profile, read_string);
  optional_field(f, "steps", s.steps, read_int);
  if (const json* d = f.get("dims")) {
    const Fields df(*d, f.path("dims"),
                    {"dim", "hidden", "experts", "tokens", "heads", "top_k", "vocab", "lora_rank", "lora_alpha"});
    optional_field(df, "dim", s.dims.dim, read_int64);
    optional_field(df, "hidden", s.dims.hidden, read_int64);
    optional_field(df, "experts", s.dims.experts, read_int64);
    optional_field(df, "tokens", s.dims.tokens, read_int64);
    optional_field(df, "heads", s.dims.heads, read_int64);
    optional_field(df, "top_k", s.dims.top_k, read_int64);
    optional_field(df, "vocab", s.dims.vocab, read_int64);
    optional_field(df, "lora_rank", s.dims.lora_rank, read_int64);
    optional_field(df, "lora_alpha", s.dims.lora_alpha, read_double);
  }
  optional_field(f, "dtype", s.dtype, read_string);
  if (const json* m = f.get("mixed_precision")) {
    const Fields mf(*m, f.path("mixed_precision"), {"param_dtype", "reduce_dtype", "upcast_trainable"});
    MixedPrecisionSpec mp;
    mp.reduce_dtype.reset();  // absent: reduce in param_dtype (upstream's None)
    optional_field(mf, "param_dtype", mp.param_dtype, read_string);
    if (const json* r = mf.get("reduce_dtype")) mp.reduce_dtype = read_string(*r, mf.path("reduce_dtype"));
    optional_field(mf, "upcast_trainable", mp.upcast_trainable, read_bool);
    s.mixed_precision = mp;
  }
  optional_field(f, "loss", s.loss, read_string);
  if (const json* o = f.get("optimizer")) {
    const Fields of(*o, f.path("optimizer"), {"kind", "lr", "beta1", "beta2", "eps", "weight_decay"});
    if (const json* k = of.get("kind")) {
      const std::string& name = read_string(*k, of.path("kind"));
      if (name == "sgd")
        s.optimizer.kind = train::OptimizerConfig::Kind::Sgd;
      else if (name == "adamw")
        s.optimizer.kind = train::OptimizerConfig::Kind::AdamW;
      else
        reject(of.path("kind"), quoted(name) + " is not an optimizer (sgd, adamw)");
    }
    optional_field(of, "lr", s.optimizer.lr, read_double);
    optional_field(of, "beta1", s.optimizer.beta1, read_double);
    optional_field(of, "beta2", s.optimizer.beta2, read_double);
    optional_field(of, "eps", s.optimizer.eps, read_double);
    optional_field(of, "weight_decay", s.optimizer.weight_decay, read_double);
  }
  optional_field(f, "input_requires_grad", s.input_requires_grad, read_bool);
  optional_field(f, "input_per_rank", s.input_per_rank, read_bool);
  optional_field(f, "embed", s.embed, read_bool);
  optional_field(f, "final_norm", s.final_norm, read_bool);
  optional_field(f, "expert_parallel", s.expert_parallel, read_bool);
  optional_field(f, "micro_batches", s.micro_batches, read_int);
  optional_field(f, "forwards_per_backward", s.forwards_per_backward, read_int);
  optional_field(f, "eval_forward", s.eval_forward, read_bool);
  if (const json* b = f.get("blocks")) {
    const std::string path = f.path("blocks");
    if (!b->is_array()) wrong_type(path, "an array of blocks", *b);
    // Counted before any BlockSpec is made (the same limit and message as validate()).
    if (b->size() > static_cast<std::size_t>(ScenarioLimits::kMaxBlocks))
      reject(path, std::to_string(b->size()) + " blocks, over the limit of " + std::to_string(ScenarioLimits::kMaxBlocks));
    for (std::size_t i = 0; i < b->size(); ++i) s.blocks.push_back(read_block((*b)[i], element_path(path, i)));
  }
  if (const json* fs = f.get("fully_shard")) {
    const std::string path = f.path("fully_shard");
    if (!fs->is_object()) wrong_type(path, "an object of module path -> options", *fs);
    for (const auto& [module, spec] : fs->items()) s.fully_shard[module] = read_shard_spec(spec, member_path(path, module));
  }
  if (const json* faults = f.get("faults")) {
    const std::string path = f.path("faults");
    if (!faults->is_array()) wrong_type(path, "an array of faults", *faults);
    if (faults->size() > static_cast<std::size_t>(ScenarioLimits::kMaxFaults))
      reject(path, std::to_string(faults->size()) + " faults, over the limit of " +
                       std::to_string(ScenarioLimits::kMaxFaults));
    for (std::size_t i = 0; i < faults->size(); ++i) {
      const Fields ff((*faults)[i], element_path(path, i),
                      {"kind", "rank", "collective", "delay_ms", "module", "pass", "step", "allocation", "limit_bytes"});
      FaultSpec fault;
      optional_field(ff, "kind", fault.kind, read_string);
      optional_field(ff, "rank", fault.rank, read_int);
      optional_field(ff, "collective", fault.collective, read_int);
      optional_field(ff, "delay_ms", fault.delay_ms, read_int);
      optional_field(ff, "module", fault.module, read_string);
      optional_field(ff, "pass", fault.pass, read_string);
      optional_field(ff, "step", fault.step, read_int);
      optional_field(ff, "allocation", fault.allocation, read_int);
      optional_field(ff, "limit_bytes", fault.limit_bytes, read_int64);
      s.faults.push_back(std::move(fault));
    }
  }
  return s;
}

// A DOM builder for nlohmann's SAX parser that also rejects what the DOM parser would let through
// silently (a duplicate key: the last one would win) or dangerously (unbounded nesting), naming
// the JSON path.
class StrictDomBuilder {
 public:
  explicit StrictDomBuilder(json& root) : root_(root) {}

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(json::number_integer_t v) { return put(v); }
  bool number_unsigned(json::number_unsigned_t v) { return put(v); }
  bool number_float(json::number_float_t v, const json::string_t&) { return put(v); }
  bool string(json::string_t& v) { return put(std::move(v)); }
  bool binary(json::binary_t& v) { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& k) {
    Frame& f = stack_.back();
    if (f.value->contains(k)) reject(member_path(f.path, k), "duplicate key");
    f.key = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    std::string what = ex.what();
    const auto bracket = what.find("] ");  // drop nlohmann's "[json.exception.parse_error.101] "
    if (!what.empty() && what[0] == '[' && bracket != std::string::npos) what = what.substr(bracket + 2);
    // "last read: '...'" quotes the whole bad token, which may be an unterminated megabyte string.
    constexpr std::size_t kMaxShown = 300;
    if (what.size() > kMaxShown) what = what.substr(0, kMaxShown) + "...";
    throw std::invalid_argument("scenario: invalid JSON at byte " + std::to_string(position) + ": " + what);
  }

 private:
  struct Frame {
    json* value;
    std::string path;
    std::string key;  // objects: the key whose value comes next
  };

  // Where the next value goes, and its path.
  std::pair<json*, std::string> slot(json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return {&root_, ""};
    }
    Frame& f = stack_.back();
    if (f.value->is_object()) {
      json& member = (*f.value)[f.key];
      member = std::move(v);
      return {&member, member_path(f.path, f.key)};
    }
    // Only the innermost container grows, so pointers to enclosing elements stay valid.
    f.value->push_back(std::move(v));
    return {&f.value->back(), element_path(f.path, f.value->size() - 1)};
  }
  bool put(json v) {
    slot(std::move(v));
    return true;
  }
  bool open(json container) {
    auto [value, path] = slot(std::move(container));
    if (stack_.size() >= static_cast<std::size_t>(ScenarioTextLimits::kMaxDepth))
      reject(path, "nested deeper than " + std::to_string(ScenarioTextLimits::kMaxDepth) + " levels");
    stack_.push_back({value, std::move(path), {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  json& root_;
  std::vector<Frame> stack_;
};

}  // namespace

json to_json(const Scenario& scenario) { return build<json>(scenario); }

std::string to_json_text(const Scenario& scenario) {
  return build<nlohmann::ordered_json>(scenario).dump(2, ' ', false, json::error_handler_t::replace);
}

Scenario scenario_from_json(const json& j) {
  Scenario s;
  try {
    s = read_scenario(j);
  } catch (const json::exception& e) {
    // Every access is type-checked first; this only keeps the "invalid_argument or runtime_error"
    // promise should one slip through.
    throw std::invalid_argument(std::string("scenario: ") + e.what());
  }
  s.validate();
  return s;
}

Scenario parse_scenario(const std::string& text) {
  if (text.size() > ScenarioTextLimits::kMaxBytes)
    throw std::invalid_argument("scenario: the text is " + std::to_string(text.size()) + " bytes, over the limit of " +
                                std::to_string(ScenarioTextLimits::kMaxBytes));
  json root;
  StrictDomBuilder builder(root);
  try {
    json::sax_parse(text, &builder);
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("scenario: invalid JSON: ") + e.what());
  }
  return scenario_from_json(root);
}

Scenario load_scenario(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw std::runtime_error(path + ": is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open (" + std::strerror(errno) + ")");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) throw std::runtime_error(path + ": cannot read (not a regular file?)");
  if (static_cast<uint64_t>(size) > ScenarioTextLimits::kMaxBytes)
    throw std::invalid_argument(path + ": the file is " + std::to_string(size) + " bytes, over the limit of " +
                                std::to_string(ScenarioTextLimits::kMaxBytes));
  in.seekg(0, std::ios::beg);
  std::string text(static_cast<std::size_t>(size), '\0');
  if (!in.read(text.data(), size)) throw std::runtime_error(path + ": read failed (" + std::strerror(errno) + ")");
  try {
    return parse_scenario(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

}  // namespace shardfuzz::harness
