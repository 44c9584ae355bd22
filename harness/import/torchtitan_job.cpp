// torchtitan job TOML → Recipe, with toml++ (Debian's libtomlplusplus-dev, header-only here so
// no shared library travels with the binary).
#include "harness/import/torchtitan_job.h"

#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 1
#include <toml++/toml.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace shardfuzz::harness::import {
namespace {

// A value as the TOML file spells it (for the errors).
std::string shown(const toml::node& n) {
  std::ostringstream os;
  n.visit([&os](const auto& v) { os << v; });
  return os.str();
}

struct Table {
  const toml::table* t;  // nullptr: the table is absent
  std::string name;
  std::string where;

  [[noreturn]] void bad(const std::string& key, const std::string& what) const {
    throw std::invalid_argument(where + ": " + name + "." + key + ": " + what);
  }
  const toml::node* node(const std::string& key) const { return t ? t->get(key) : nullptr; }

  void integer(const std::string& key, int64_t& out) const {
    const toml::node* n = node(key);
    if (!n) return;
    if (const auto v = n->value_exact<int64_t>()) {
      out = *v;
      return;
    }
    bad(key, shown(*n) + " is not an integer");
  }
  void integer(const std::string& key, int& out) const {
    int64_t v = out;
    integer(key, v);
    if (v < -1 || v > (1 << 20)) bad(key, std::to_string(v) + " outside [-1, 1048576]");
    out = static_cast<int>(v);
  }
  void string(const std::string& key, std::string& out) const {
    const toml::node* n = node(key);
    if (!n) return;
    if (const auto v = n->value_exact<std::string>()) {
      out = *v;
      return;
    }
    bad(key, shown(*n) + " is not a string");
  }
  // A degree the native runtime does not model must stay 1.
  void unmodelled_degree(const std::string& key) const {
    int v = 1;
    integer(key, v);
    if (v != 1 && v != -1) bad(key, std::to_string(v) + ": only 1 is modelled (FSDP, HSDP and expert parallelism are)");
  }
};

Table table(const toml::table& root, const std::string& name, const std::string& where) {
  const toml::node* n = root.get(name);
  if (n && !n->is_table()) throw std::invalid_argument(where + ": " + name + ": not a table");
  return {n ? n->as_table() : nullptr, name, where};
}

// The selective option is "op" or an integer (every N-th layer).
void selective_option(const Table& ac, std::string& out) {
  const toml::node* n = ac.node("selective_ac_option");
  if (!n) return;
  if (const auto v = n->value_exact<int64_t>()) {
    out = std::to_string(*v);
    return;
  }
  ac.string("selective_ac_option", out);
  if (out != "op" && out.find_first_not_of("0123456789") != std::string::npos)
    ac.bad("selective_ac_option", "\"" + out + "\" is not \"op\" or a layer interval");
}

}  // namespace

TorchtitanJob torchtitan_job_from_toml(const std::string& text, const std::string& where) {
  toml::table root;
  try {
    root = toml::parse(text, where);
  } catch (const toml::parse_error& e) {
    throw std::invalid_argument(where + ":" + std::to_string(e.source().begin.line) + ": not TOML: " + std::string(e.description()));
  }
  TorchtitanJob job;
  Recipe& r = job.recipe;
  const Table p = table(root, "parallelism", where);
  p.integer("data_parallel_replicate_degree", r.dp_replicate);
  p.integer("data_parallel_shard_degree", r.dp_shard);
  p.integer("expert_parallel_degree", r.ep);
  p.string("fsdp_reshard_after_forward", r.reshard_after_forward);
  for (const char* key : {"tensor_parallel_degree", "context_parallel_degree", "pipeline_parallel_degree"}) p.unmodelled_degree(key);
  const Table ac = table(root, "activation_checkpoint", where);
  ac.string("mode", r.ac);
  selective_option(ac, r.selective_ac_option);
  const Table t = table(root, "training", where);
  t.string("mixed_precision_param", r.param_dtype);
  t.string("mixed_precision_reduce", r.reduce_dtype);
  t.integer("local_batch_size", r.local_batch_size);
  t.integer("seq_len", r.seq_len);
  const Table m = table(root, "model", where);
  m.string("name", job.model_name);
  m.string("flavor", job.flavor);
  job.world_known = r.dp_shard > 0;
  r.world = job.world_known ? r.dp_shard * r.dp_replicate : 1;
  return job;
}

TorchtitanJob read_torchtitan_job(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return torchtitan_job_from_toml(text.str(), path);
}

}  // namespace shardfuzz::harness::import
