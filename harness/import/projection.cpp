// Pricing an imported model's schedule with its real bytes.
#include "harness/import/projection.h"


#include <algorithm>
#include <cstdio>
#include <sstream>

namespace shardfuzz::harness::import {
namespace {

using memory::Event;

// Bytes of one layer's activations (the estimate): the residual stream and norms, q/k/v/o, and the
// feed-forward's inner rows — under balanced routing each token reaches top_k experts.
int64_t layer_activations(const ModelShape& m, int64_t tokens, int64_t bytes) {
  const AttentionShape& a = m.attention;
  const int64_t attention = a.kind == AttentionShape::Kind::Gqa
                                ? (a.heads * a.head_dim) * 2 + a.kv_heads * a.head_dim * 2
                                : a.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim) * 2;
  const bool moe = m.moe.moe;
  const int64_t ffn = moe ? m.moe.top_k * 3 * m.moe.expert_intermediate + m.moe.experts + 3 * m.moe.shared_intermediate
                          : 3 * m.dense.intermediate;
  return tokens * bytes * (4 * m.hidden + attention + ffn);
}

Baseline baseline_of(const FsdpPlan& plan, const ModelShape& m, const Recipe& r) {
  Baseline b;
  const int64_t reduce_bytes = r.mixed_precision ? dtype_bytes(r.reduce_dtype) : dtype_bytes(m.dtype);
  for (const PlannedGroup& g : plan.groups) {
    b.params += g.sharded_bytes;
    const int64_t trainable_shard = g.trainable_padded_numel / g.shard_degree;
    b.grads += trainable_shard * reduce_bytes;
    b.optimizer += trainable_shard * 2 * 4;
  }
  const int64_t tokens = r.local_batch_size * r.seq_len, act_bytes = dtype_bytes(plan.param_dtype);
  b.recompute = layer_activations(m, tokens, act_bytes);
  b.kept_per_layer = r.ac == "full" ? tokens * m.hidden * act_bytes : r.ac == "selective" ? b.recompute / 2 : b.recompute;
  b.assumption = std::to_string(r.local_batch_size) + " x " + std::to_string(r.seq_len) + " tokens per rank, " + plan.param_dtype +
                 " activations, " + (m.moe.moe ? "balanced routing (each token reaches top-k experts), " : "") + "AC " + r.ac + " keeps " +
                 (r.ac == "full" ? "each layer's input" : r.ac == "selective" ? "about half a layer's activations" : "every activation");
  return b;
}

int64_t priced(const std::vector<std::string>& groups, const ImportedScenario& imported, const FsdpPlan& plan) {
  int64_t bytes = 0;
  for (const auto& g : groups) {
    const auto it = imported.plan_group.find(g == "root" ? "" : g);
    if (it != imported.plan_group.end()) bytes += plan.group(it->second).all_gather_bytes;
  }
  return bytes;
}

// Block index of "layers.i" (a block itself, not a group inside it), or -1.
int block_index(const std::string& group) {
  const auto parts = split_block_path(group);
  return parts && parts->second.empty() ? static_cast<int>(parts->first) : -1;
}

}  // namespace

Projection project(const RunRecord& run, const ImportedScenario& imported, const FsdpPlan& plan, const ModelShape& m,
                   const Recipe& recipe, int64_t device_memory) {
  Projection p;
  p.baseline = baseline_of(plan, m, recipe);
  p.device_memory = device_memory;
  const int last_step = imported.scenario.steps - 1;
  const bool real_widths = imported.scenario.dims.dim == m.hidden;
  int64_t largest = 0;
  int first_oom_position = -1;  // the earliest layer (in backward order, over the ranks) past the memory
  for (const RankRecord& rank : run.ranks) {
    int position = 0;
    for (const auto& e : rank.timeline) {
      const int layer = block_index(e.group);
      if (e.event != Event::PostBackward || e.step != last_step || layer < 0) continue;
      ProjectedLayer row;
      row.rank = rank.rank;
      row.step = e.step;
      row.group = e.group;
      row.unsharded = priced(e.unsharded, imported, plan);
      row.pending = priced(e.pending_all_gather, imported, plan);
      row.stale = priced(e.stale_all_gathers(), imported, plan);
      // The layers below this one have not run backward: AC still keeps their inputs.
      row.activations = layer * p.baseline.kept_per_layer + p.baseline.recompute;
      row.total = p.baseline.fixed() + row.activations + row.unsharded + row.pending;
      if (real_widths) row.measured = e.allocated_bytes;
      largest = std::max(largest, row.total);
      if (device_memory > 0 && row.total > device_memory && (first_oom_position < 0 || position < first_oom_position)) {
        first_oom_position = position;
        p.out_of_memory = row;
      }
      ++position;
      p.layers.push_back(row);
    }
  }
  p.headroom = device_memory > 0 ? device_memory - largest : 0;
  return p;
}

namespace {

std::string gib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (int64_t{1} << 30));
  return text;
}

}  // namespace

std::string projection_table(const Projection& p) {
  std::ostringstream os;
  const Baseline& b = p.baseline;
  const bool measured = !p.layers.empty() && p.layers.front().measured >= 0;
  os << "projection: baseline per rank " << gib(b.fixed()) << " (parameters " << gib(b.params) << ", gradients " << gib(b.grads)
     << ", optimizer states " << gib(b.optimizer) << "); activations: " << gib(b.kept_per_layer) << " kept per layer, "
     << gib(b.recompute) << " for the layer recomputed (" << b.assumption << ")\n";
  if (measured)
    os << "projection: 'run holds' is what the shape-only run's allocator counted on the rank at that point (its blocks "
          "approximate the model's: one linear for attention, two-matrix experts; see docs/production-oom.md)\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-12s %12s %12s %12s %14s %12s%s\n", "rank 0", "unsharded", "pending", "stale", "activations",
                "total", measured ? "    run holds" : "");
  os << line;
  int64_t previous_stale = -1;
  for (const ProjectedLayer& r : p.layers) {
    if (r.rank != 0) continue;
    const std::string growth = previous_stale >= 0 && r.stale > previous_stale ? "  stale +" + gib(r.stale - previous_stale) : "";
    const std::string held = measured ? " " + std::string(12 - std::min<std::size_t>(12, gib(r.measured).size()), ' ') + gib(r.measured) : "";
    std::snprintf(line, sizeof line, "%-12s %12s %12s %12s %14s %12s%s%s\n", r.group.c_str(), gib(r.unsharded).c_str(),
                  gib(r.pending).c_str(), gib(r.stale).c_str(), gib(r.activations).c_str(), gib(r.total).c_str(), held.c_str(),
                  growth.c_str());
    os << line;
    previous_stale = r.stale;
  }
  if (p.device_memory > 0) {
    if (p.out_of_memory)
      os << "projection: out of memory at " << p.out_of_memory->group << "'s backward on rank " << p.out_of_memory->rank << ": "
         << gib(p.out_of_memory->total) << " of " << gib(p.device_memory) << "\n";
    else
      os << "projection: fits in " << gib(p.device_memory) << " with " << gib(p.headroom) << " to spare at the peak\n";
  }
  return os.str();
}

}  // namespace shardfuzz::harness::import
