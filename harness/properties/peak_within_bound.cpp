// Property 5: training peak within an analytic bound derived from the tree, in the spirit of
// upstream's test_fully_shard_memory table (backward, reshard_after_forward=True:
// 4 x block + non-block + 2 x sharded + buffer), extended with optimizer state and a bound on the
// activations the model's ops save.
#include "harness/properties/property.h"

#include <algorithm>
#include <map>

namespace shardfuzz::harness {

Verdict check_peak_within_bound(const Scenario& sc, const RunRecord& run) {
  if (!run.observed.baseline)
    return {"peak_within_bound", true, true, "the " + run.backend + " backend has no pre-model baseline to measure a peak from"};
  for (const RankRecord& r : run.ranks) {
    if (r.peak_above_current_at_reset != 0)
      return {"peak_within_bound", false, false,
              "rank " + std::to_string(r.rank) + ": the training peak did not restart at training's start: right after "
              "reset_peak the probe's peak was " + std::to_string(r.peak_above_current_at_reset) +
                  " bytes above its current bytes (every peak figure then includes what came before training, such "
                  "as building the full model before sharding)"};
    std::map<std::string, int64_t> unsharded = all_gather_bytes_by_group(r);
    int64_t sharded = 0;
    for (const ShardRecord& s : r.shards) sharded += s.padded_bytes;
    int64_t block = 0;
    for (const auto& [g, b] : unsharded)
      if (g != "root") block = std::max(block, b);
    const int64_t non_block = unsharded.count("root") ? unsharded["root"] : 0;
    const int64_t optimizer = sc.optimizer.kind == train::OptimizerConfig::Kind::AdamW ? 2 * sharded : 0;
    const int64_t T = sc.dims.tokens, D = sc.dims.dim, H = sc.dims.hidden, E = sc.dims.experts;
    const int64_t per_block = 4 * T * (8 * D + 4 * E * H + 2 * H + E + 8);
    const int64_t activations = per_block * static_cast<int64_t>(sc.blocks.size() + 1) + 16 * T * D;
    const int64_t bound = 4 * block + non_block + 2 * sharded + optimizer + activations + Tolerances::kPeakBufferBytes;
    if (r.training_peak_bytes > bound)
      return {"peak_within_bound", false, false,
              "rank " + std::to_string(r.rank) + ": training peak " + std::to_string(r.training_peak_bytes) +
                  " bytes over the bound " + std::to_string(bound) + " (4 x block " + std::to_string(block) +
                  " + non-block " + std::to_string(non_block) + " + 2 x sharded " + std::to_string(sharded) +
                  " + optimizer " + std::to_string(optimizer) + " + activations " + std::to_string(activations) +
                  " + buffer " + std::to_string(Tolerances::kPeakBufferBytes) + ")"};
  }
  return {"peak_within_bound", true, false, "within the bound"};
}

}  // namespace shardfuzz::harness
