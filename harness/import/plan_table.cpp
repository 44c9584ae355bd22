// Printing an imported model's FSDP plan.
#include "harness/import/plan_table.h"

#include "harness/scenario/scenario.h"

#include <cstdio>
#include <sstream>

namespace shardfuzz::harness::import {
namespace {

std::string grouped(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

// A block's group by its path inside the block: "" for the block, ".moe.experts" for its experts.
std::string inside_block(const std::string& path) { return split_block_path(path)->second; }

// Two blocks alike: the same groups (by their path inside the block) with the same bytes, mesh
// and policy.
bool alike(const std::vector<const PlannedGroup*>& a, const std::vector<const PlannedGroup*>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < a.size(); ++k)
    if (inside_block(a[k]->path) != inside_block(b[k]->path) || a[k]->padded_numel != b[k]->padded_numel ||
        a[k]->mesh != b[k]->mesh || a[k]->reshard_after_forward != b[k]->reshard_after_forward)
      return false;
  return true;
}

std::string row(const std::string& path, const PlannedGroup& g) {
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %-16s %4d %16s %28s %28s %s\n", path.c_str(), g.mesh.c_str(), g.shard_degree,
                grouped(g.numel).c_str(), bytes_text(g.all_gather_bytes).c_str(), bytes_text(g.sharded_bytes).c_str(),
                g.reshard_after_forward ? "yes" : "no");
  return line;
}

// The blocks' rows: runs of blocks alike fold into one row per group ("layers.1-92.moe.experts").
std::string block_rows(const std::vector<std::vector<const PlannedGroup*>>& blocks) {
  std::string out;
  for (std::size_t i = 0; i < blocks.size();) {
    std::size_t j = i + 1;
    while (j < blocks.size() && alike(blocks[i], blocks[j])) ++j;
    const std::string range = j > i + 1 ? std::to_string(i) + "-" + std::to_string(j - 1) : std::to_string(i);
    for (const PlannedGroup* member : blocks[i]) out += row("layers." + range + inside_block(member->path), *member);
    i = j;
  }
  return out;
}

}  // namespace

std::string bytes_text(int64_t bytes) {
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return grouped(bytes) + " B (" + mib + ")";
}

std::string describe_model(const ModelShape& m) {
  std::ostringstream os;
  const AttentionShape& a = m.attention;
  os << m.model_type << ": " << m.layers << " layers (" << m.moe_layers() << " MoE), hidden " << m.hidden << ", vocab "
     << m.vocab << (m.tied_embeddings ? " (tied)" : "") << ", " << m.dtype << "; attention "
     << (a.kind == AttentionShape::Kind::Mla ? "MLA" : "GQA") << " " << a.heads << " heads";
  if (a.kind == AttentionShape::Kind::Gqa) os << ", " << a.kv_heads << " KV heads, head_dim " << a.head_dim << (a.qk_norm ? ", qk-norm" : "");
  if (m.moe.moe)
    os << "; " << m.moe.experts << " experts, top-" << m.moe.top_k << ", expert width " << m.moe.expert_intermediate
       << (m.moe.shared_experts ? ", " + std::to_string(m.moe.shared_experts) + " shared (width " + std::to_string(m.moe.shared_intermediate) + ")" : "");
  if (m.moe_layers() < m.layers) os << "; dense width " << m.dense.intermediate;
  return os.str();
}

std::string describe_recipe(const Recipe& r, const FsdpPlan& plan) {
  std::ostringstream os;
  os << "world " << r.world << " (dp_replicate " << r.dp_replicate << " x dp_shard " << r.shard_degree() << ")";
  if (r.ep > 1) os << ", EP " << r.ep << " (" << plan.local_experts << " experts per rank, experts sharded over " << r.experts_shard_degree() << ")";
  os << ", reshard_after_forward " << r.reshard_after_forward << ", AC " << r.ac << ", parameters held in " << plan.storage_dtype
     << " and all-gathered in " << plan.param_dtype;
  return os.str();
}

std::string plan_table(const FsdpPlan& plan) {
  std::ostringstream os;
  char header[256];
  std::snprintf(header, sizeof header, "%-28s %-16s %4s %16s %28s %28s %s\n", "group", "mesh", "deg", "params",
                "all-gather (unsharded)", "shard per rank", "reshard after fwd");
  os << header;
  // Each block's groups together (its experts, then itself), printed when the blocks end (before
  // the head and the root).
  std::vector<std::vector<const PlannedGroup*>> blocks;
  for (const auto& g : plan.groups) {
    if (const auto parts = split_block_path(g.path)) {
      if (parts->first >= blocks.size()) blocks.resize(parts->first + 1);
      blocks[parts->first].push_back(&g);
      continue;
    }
    os << block_rows(blocks);
    blocks.clear();
    os << row(g.path.empty() ? "(root)" : g.path, g);
  }
  os << block_rows(blocks);
  return os.str();
}

nlohmann::json plan_json(const ModelShape& m, const Recipe& r, const FsdpPlan& plan) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : plan.groups)
    groups.push_back({{"path", g.path}, {"mesh", g.mesh}, {"shard_degree", g.shard_degree}, {"shard_dim", g.shard_dim},
                      {"reshard_after_forward", g.reshard_after_forward}, {"numel", g.numel}, {"padded_numel", g.padded_numel},
                      {"all_gather_bytes", g.all_gather_bytes}, {"sharded_bytes", g.sharded_bytes}});
  return {{"model", describe_model(m)}, {"recipe", describe_recipe(r, plan)}, {"storage_dtype", plan.storage_dtype},
          {"param_dtype", plan.param_dtype}, {"local_experts", plan.local_experts}, {"groups", groups}};
}

}  // namespace shardfuzz::harness::import
