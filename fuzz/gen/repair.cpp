// Legalising a scenario's combinations (see repair.h for the rules and their order).
#include "fuzz/gen/repair.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace shardfuzz::fuzz::gen {

namespace {

void drop_unwrapped(std::optional<std::vector<std::string>>& list, const harness::Scenario& sc) {
  if (!list) return;
  std::vector<std::string> kept;
  for (auto& entry : *list)
    if (entry == "self" || sc.fully_shard.count(entry)) kept.push_back(std::move(entry));
  *list = std::move(kept);
}

// Keeps a fault inside the model and the run it now belongs to (blocks and steps may have shrunk).
void repair_fault(const harness::Scenario& sc, harness::FaultSpec& fault) {
  if (auto* c = std::get_if<harness::CollectiveFault>(&fault.fault)) {
    if (c->kind != harness::CollectiveFault::Kind::Straggler) c->delay_ms = 0;
    else if (c->delay_ms < 1) c->delay_ms = 1;
  } else if (auto* m = std::get_if<harness::ModuleFault>(&fault.fault)) {
    if (m->module.rfind("layers.", 0) == 0 && !sc.blocks.empty()) {
      int k = 0;
      try {
        k = std::stoi(m->module.substr(7));
      } catch (const std::exception&) {
      }
      m->module = "layers." + std::to_string(std::max(0, k) % static_cast<int>(sc.blocks.size()));
    }
    m->step = std::max(0, std::min(m->step, sc.steps - 1));
  } else if (auto* a = std::get_if<harness::AllocationFault>(&fault.fault)) {
    if (auto* at = std::get_if<harness::AllocationFault::AtAllocation>(&a->trigger)) at->index = std::max(0, at->index);
    else if (auto* above = std::get_if<harness::AllocationFault::AboveBytes>(&a->trigger)) above->limit = std::max<int64_t>(1, above->limit);
  }
}

// Blocks: options that need another kind or mode dropped, LoRA only on the block's linears, the
// dims their attention and routing need, expert parallelism only where the world splits it.
void repair_blocks(harness::Scenario& sc) {
  bool attention = false, routed = false;
  for (auto& b : sc.blocks) {
    if (b.kind != harness::BlockSpec::Kind::Moe) b.gated = false;
    if (b.ac == ac::CheckpointMode::None) b.ac_wraps_hooks = false;
    const std::vector<std::string> linears = b.linear_paths();
    std::vector<std::string> lora;
    for (auto& l : b.lora)
      if (std::count(linears.begin(), linears.end(), l) && !std::count(lora.begin(), lora.end(), l)) lora.push_back(l);
    b.lora = std::move(lora);
    for (const auto& l : b.lora)
      sc.dims.lora_rank = std::max<int64_t>(1, std::min(sc.dims.lora_rank, harness::BlockSpec::linear_min_features(l, sc.dims)));
    attention = attention || b.attention;
    routed = routed || b.kind == harness::BlockSpec::Kind::RoutedMoe;
  }
  if (attention && sc.dims.heads > 0 && sc.dims.dim > 0 && sc.dims.dim % sc.dims.heads != 0)
    sc.dims.heads = std::gcd(sc.dims.heads, sc.dims.dim);
  if (routed && sc.dims.experts > 0) sc.dims.top_k = std::max<int64_t>(1, std::min(sc.dims.top_k, sc.dims.experts));
  if (sc.expert_parallel) {
    const int ep = sc.expert_shard_size > 0 ? sc.world_size / sc.expert_shard_size : 0;
    if (ep < 1 || sc.dims.experts % ep != 0) sc.expert_parallel = false;
  }
  if (sc.expert_parallel)  // the experts of every routed block hold this rank's experts only
    for (std::size_t i = 0; i < sc.blocks.size(); ++i)
      if (sc.blocks[i].kind == harness::BlockSpec::Kind::RoutedMoe)
        sc.fully_shard["layers." + std::to_string(i) + ".moe.experts"].mesh = "experts";
}

// fully_shard entries: only modules that exist (and the root), on a mesh they may use, with a
// reshard_after_forward and a shard dim their group divides, prefetching only wrapped modules.
void repair_groups(harness::Scenario& sc) {
  const std::vector<std::string> paths = sc.module_paths();
  const std::set<std::string> modules(paths.begin(), paths.end());
  for (auto it = sc.fully_shard.begin(); it != sc.fully_shard.end();)
    it = modules.count(it->first) ? std::next(it) : sc.fully_shard.erase(it);
  sc.fully_shard.try_emplace("");

  for (auto& [path, spec] : sc.fully_shard) {
    if (spec.mesh != "dp" && spec.mesh != "experts") spec.mesh = "dp";
    // Under expert parallelism the experts mesh is 1-D dp_mod_ep: only EP-local experts may use it.
    if (sc.expert_parallel && spec.mesh == "experts" && !sc.is_routed_experts(path)) spec.mesh = "dp";
    const int group = (spec.mesh == "experts" && sc.expert_shard_size > 0) ? sc.expert_shard_size : sc.world_size;
    auto& raf = spec.reshard_after_forward;
    if (raf.kind == fsdp::ReshardAfterForward::Kind::Int) {
      if (raf.n < 1) raf.n = 1;
      if (group > 0 && group % raf.n != 0) raf.n = std::gcd(raf.n, group);
    }
    if (spec.shard_dim != 0) {
      const bool legal = spec.shard_dim > 0 && spec.shard_dim <= 2 && sc.block_of_experts(path) && group > 0 &&
                         sc.dims.dim % group == 0 && sc.dims.hidden % group == 0;
      if (!legal) spec.shard_dim = 0;
    }
  }
  for (auto& [path, spec] : sc.fully_shard) {
    drop_unwrapped(spec.forward_prefetch, sc);
    drop_unwrapped(spec.backward_prefetch, sc);
  }
}

}  // namespace

harness::Scenario repair(harness::Scenario sc) {
  for (auto& f : sc.faults) {  // the world may have shrunk under the plan
    if (sc.world_size > 0) f.rank = ((f.rank % sc.world_size) + sc.world_size) % sc.world_size;
    repair_fault(sc, f);
  }
  if (sc.expert_shard_size < 0) sc.expert_shard_size = 0;
  if (sc.expert_shard_size > 0 && sc.world_size > 0 && sc.world_size % sc.expert_shard_size != 0)
    sc.expert_shard_size = std::gcd(sc.expert_shard_size, sc.world_size);
  repair_blocks(sc);
  repair_groups(sc);
  return sc;
}

}  // namespace shardfuzz::fuzz::gen
