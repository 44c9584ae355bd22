// Legalising a scenario's combinations (see repair.h for the rules and their order).
#include "fuzz/gen/repair.h"

#include <numeric>
#include <set>

namespace shardfuzz::fuzz::gen {

namespace {

bool is_experts_of_moe(const harness::Scenario& sc, const std::string& path) {
  for (std::size_t i = 0; i < sc.blocks.size(); ++i)
    if (sc.blocks[i].kind == harness::BlockSpec::Kind::Moe && path == "layers." + std::to_string(i) + ".moe.experts")
      return true;
  return false;
}

void drop_unwrapped(std::optional<std::vector<std::string>>& list, const harness::Scenario& sc) {
  if (!list) return;
  std::vector<std::string> kept;
  for (auto& entry : *list)
    if (entry == "self" || sc.fully_shard.count(entry)) kept.push_back(std::move(entry));
  *list = std::move(kept);
}

}  // namespace

harness::Scenario repair(harness::Scenario sc) {
  if (sc.expert_shard_size < 0) sc.expert_shard_size = 0;
  if (sc.expert_shard_size > 0 && sc.world_size > 0 && sc.world_size % sc.expert_shard_size != 0)
    sc.expert_shard_size = std::gcd(sc.expert_shard_size, sc.world_size);

  for (auto& b : sc.blocks) {
    if (b.kind == harness::BlockSpec::Kind::Mlp) b.gated = false;
    b.lora.clear();
  }

  const std::vector<std::string> paths = sc.module_paths();
  const std::set<std::string> modules(paths.begin(), paths.end());
  for (auto it = sc.fully_shard.begin(); it != sc.fully_shard.end();)
    it = modules.count(it->first) ? std::next(it) : sc.fully_shard.erase(it);
  sc.fully_shard.try_emplace("");

  for (auto& [path, spec] : sc.fully_shard) {
    if (spec.mesh != "dp" && spec.mesh != "experts") spec.mesh = "dp";
    const int group = (spec.mesh == "experts" && sc.expert_shard_size > 0) ? sc.expert_shard_size : sc.world_size;
    auto& raf = spec.reshard_after_forward;
    if (raf.kind == fsdp::ReshardAfterForward::Kind::Int) {
      if (raf.n < 1) raf.n = 1;
      if (group > 0 && group % raf.n != 0) raf.n = std::gcd(raf.n, group);
    }
    if (spec.shard_dim != 0) {
      const bool legal = spec.shard_dim > 0 && spec.shard_dim <= 2 && is_experts_of_moe(sc, path) && group > 0 &&
                         sc.dims.dim % group == 0 && sc.dims.hidden % group == 0;
      if (!legal) spec.shard_dim = 0;
    }
  }
  for (auto& [path, spec] : sc.fully_shard) {
    drop_unwrapped(spec.forward_prefetch, sc);
    drop_unwrapped(spec.backward_prefetch, sc);
  }
  return sc;
}

}  // namespace shardfuzz::fuzz::gen
