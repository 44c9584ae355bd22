// Upstream's memory bound over the native model.
#include "harness/expectations/memory_formula.h"

#include <cmath>
#include <stdexcept>

namespace shardfuzz::harness::expectations {
namespace {

bool under(const std::string& fqn, const std::string& module) { return fqn.rfind(module + ".", 0) == 0; }

}  // namespace

ModelNumels model_numels(const RunRecord& run, const std::string& block_module) {
  ModelNumels n;
  for (const auto& rank : run.ranks)
    for (const auto& shard : rank.shards) {
      const int64_t numel = shard.local.defined() ? shard.local.numel() : 0;
      n.unsharded += numel;
      if (under(shard.fqn, block_module)) n.block += numel;
      if (!under(shard.fqn, "layers")) n.non_block += numel;
    }
  if (n.unsharded == 0) throw std::invalid_argument("memory formula: the run recorded no parameter shards");
  if (n.block == 0) throw std::invalid_argument("memory formula: no parameter under '" + block_module + "'");
  const int64_t world = static_cast<int64_t>(run.ranks.size());
  n.sharded = (n.unsharded + world - 1) / world;
  return n;
}

int64_t formula_bytes(const MemoryFormula& f, const ModelNumels& n) {
  const double numel = f.block * static_cast<double>(n.block) + f.non_block * static_cast<double>(n.non_block) +
                       f.sharded * static_cast<double>(n.sharded) + f.unsharded * static_cast<double>(n.unsharded);
  return static_cast<int64_t>(std::llround(numel * 4.0 + f.buffer_mb * 1e6));
}

}  // namespace shardfuzz::harness::expectations
