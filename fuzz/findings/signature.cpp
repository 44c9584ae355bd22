// The structure of a scenario, and the signature of a finding built on it.
#include "fuzz/findings/signature.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace shardfuzz::fuzz::findings {
namespace {

const char* yes_no(bool b) { return b ? "yes" : "no"; }
const char* one_or_many(int n) { return n > 1 ? "many" : "1"; }

std::string prefetch_list(const std::optional<std::vector<std::string>>& list) {
  if (!list) return "absent";
  return list->empty() ? "empty" : "listed";
}

std::string mixed_precision(const harness::Scenario& s) {
  if (!s.mixed_precision) return "none";
  const auto& mp = *s.mixed_precision;
  return mp.param_dtype + "/" + mp.reduce_dtype.value_or("param_dtype") + (mp.upcast_trainable ? "/upcast" : "");
}

void write_block(std::ostream& out, std::size_t i, const harness::BlockSpec& b) {
  std::vector<std::string> lora = b.lora;
  std::sort(lora.begin(), lora.end());
  std::string adapters;
  for (const auto& path : lora) adapters += (adapters.empty() ? "" : "+") + path;
  out << "block " << i << ": " << harness::name_of(b.kind);
  if (b.kind == harness::BlockSpec::Kind::Moe) out << (b.gated ? " gated" : " ungated");
  out << ", ac " << harness::name_of(b.ac) << ", ac_wraps_hooks " << yes_no(b.ac_wraps_hooks) << ", frozen "
      << yes_no(b.frozen) << ", attention " << yes_no(b.attention) << ", norm " << yes_no(b.norm) << ", no_grad "
      << yes_no(b.no_grad) << ", lora " << (adapters.empty() ? "-" : adapters) << "\n";
}

void write_faults(std::ostream& out, const std::vector<harness::FaultSpec>& faults) {
  std::vector<std::string> kinds;
  for (const auto& f : faults) {
    const auto* m = f.in_module();
    const bool exception = m && m->kind == harness::ModuleFault::Kind::Exception;
    kinds.push_back(f.kind_name() + (exception ? std::string(" in ") + harness::name_of(m->pass) : ""));
  }
  std::sort(kinds.begin(), kinds.end());  // the plan's order does not matter, only what it holds
  out << "faults: ";
  if (kinds.empty()) out << "none";
  for (std::size_t i = 0; i < kinds.size(); ++i) out << (i ? ", " : "") << kinds[i];
  out << "\n";
}

void check_name(const std::string& what, const std::string& value) {
  if (value.find('|') != std::string::npos)
    throw std::invalid_argument("finding signature: " + what + " \"" + value + "\" holds '|', the separator");
}

}  // namespace

std::string structural_shape(const harness::Scenario& s) {
  std::ostringstream out;
  out << "world " << s.world_size << ", expert_shard_size " << s.expert_shard_size << ", expert_parallel "
      << yes_no(s.expert_parallel) << "\n";
  out << "steps " << one_or_many(s.steps) << ", micro_batches " << one_or_many(s.micro_batches)
      << ", forwards_per_backward " << one_or_many(s.forwards_per_backward) << ", eval_forward "
      << yes_no(s.eval_forward) << "\n";
  out << "model: embed " << yes_no(s.embed) << ", final_norm " << yes_no(s.final_norm) << ", input_requires_grad "
      << yes_no(s.input_requires_grad) << ", input_per_rank " << yes_no(s.input_per_rank) << ", loss " << s.loss
      << ", optimizer " << harness::name_of(s.optimizer.kind) << ", dtype " << s.dtype << ", mixed_precision "
      << mixed_precision(s) << ", device_memory " << (s.device_memory_bytes > 0 ? "bounded" : "unbounded")
      << ", shape_only " << yes_no(s.shape_only.has_value()) << "\n";
  for (std::size_t i = 0; i < s.blocks.size(); ++i) write_block(out, i, s.blocks[i]);
  for (const auto& [path, spec] : s.fully_shard)  // a std::map: sorted by path
    out << "fully_shard \"" << path << "\": mesh " << spec.mesh << ", reshard_after_forward "
        << spec.reshard_after_forward.describe() << ", shard_dim " << spec.shard_dim << ", forward_prefetch "
        << prefetch_list(spec.forward_prefetch) << ", backward_prefetch " << prefetch_list(spec.backward_prefetch)
        << "\n";
  write_faults(out, s.faults);
  return out.str();
}

std::string fnv1a64_hex(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

std::string finding_signature(const std::string& property, const std::string& zoo_or_blamed,
                              const std::string& shape) {
  if (property.empty()) throw std::invalid_argument("finding signature: property is empty");
  check_name("property", property);
  check_name("zoo", zoo_or_blamed);
  return property + "|" + (zoo_or_blamed.empty() ? "unattributed" : zoo_or_blamed) + "|" + fnv1a64_hex(shape);
}

}  // namespace shardfuzz::fuzz::findings
