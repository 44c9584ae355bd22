// The budgeted shrink driver and the structural shrink tree (see shrink.h).
#include "fuzz/shrink.h"

#include "fuzz/gen/repair.h"
#include "harness/scenario_json.h"

#include <rapidcheck/seq/Create.h>
#include <rapidcheck/shrinkable/Create.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <set>
#include <vector>

namespace shardfuzz::fuzz {

namespace {

using harness::Scenario;
using harness::ShardSpec;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

bool validates(const Scenario& sc) {
  try {
    sc.validate();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// ---- structural edits -------------------------------------------------------------------------

int depth(const std::string& path) {
  return path.empty() ? 0 : 1 + static_cast<int>(std::count(path.begin(), path.end(), '.'));
}

// Block index of a "layers.i[.sub]" path, with the rest (".sub" or ""); nullopt otherwise.
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

// Removes the blocks in `dropped`, renumbering the rest; fully_shard entries and prefetch entries
// of dropped blocks go with them.
Scenario drop_blocks(const Scenario& sc, const std::set<std::size_t>& dropped) {
  std::vector<long> new_index(sc.blocks.size(), -1);
  Scenario out = sc;
  out.blocks.clear();
  for (std::size_t i = 0; i < sc.blocks.size(); ++i)
    if (!dropped.count(i)) {
      new_index[i] = static_cast<long>(out.blocks.size());
      out.blocks.push_back(sc.blocks[i]);
    }
  // nullopt: the path names a dropped block; else the renumbered path.
  auto rename = [&](const std::string& path) -> std::optional<std::string> {
    auto parts = split_block_path(path);
    if (!parts) return path;
    if (parts->first >= new_index.size()) return path;  // not a block of this model: left to repair
    if (new_index[parts->first] < 0) return std::nullopt;
    return "layers." + std::to_string(new_index[parts->first]) + parts->second;
  };
  auto rename_list = [&](std::optional<std::vector<std::string>>& list) {
    if (!list) return;
    std::vector<std::string> kept;
    for (const auto& entry : *list)
      if (entry == "self") kept.push_back(entry);
      else if (auto renamed = rename(entry)) kept.push_back(*renamed);
    *list = std::move(kept);
  };
  out.fully_shard.clear();
  for (const auto& [path, spec] : sc.fully_shard) {
    auto renamed = rename(path);
    if (!renamed) continue;
    ShardSpec s = spec;
    rename_list(s.forward_prefetch);
    rename_list(s.backward_prefetch);
    out.fully_shard[*renamed] = std::move(s);
  }
  return out;
}

// Values below `v` worth trying, smallest first: the generator's values below v, and v / 2 when v
// is above all of them.
std::vector<int64_t> smaller(int64_t v, const std::vector<int64_t>& usual) {
  std::vector<int64_t> out;
  for (int64_t u : usual)
    if (u < v) out.push_back(u);
  if (!usual.empty() && v > usual.back() && v / 2 > usual.back()) out.push_back(v / 2);
  return out;
}

std::vector<Scenario> raw_edits(const Scenario& sc, const StructuralShrinkOptions& options) {
  std::vector<Scenario> out;
  const std::size_t n = sc.blocks.size();

  // Fewer blocks: the largest chunks first, keeping at least one block.
  for (std::size_t len = n > 0 ? n - 1 : 0; len >= 1; --len)
    for (std::size_t start = 0; start + len <= n; ++start) {
      std::set<std::size_t> dropped;
      for (std::size_t i = start; i < start + len; ++i) dropped.insert(i);
      out.push_back(drop_blocks(sc, dropped));
    }

  // Fewer faults, then each one earlier, on rank 0, and (a straggler) shorter.
  for (std::size_t i = 0; i < sc.faults.size(); ++i) {
    Scenario s = sc;
    s.faults.erase(s.faults.begin() + static_cast<std::ptrdiff_t>(i));
    out.push_back(s);
  }
  for (std::size_t i = 0; i < sc.faults.size(); ++i) {
    const harness::FaultSpec& f = sc.faults[i];
    for (int c : {0, f.collective / 2, f.collective - 1})
      if (c >= 0 && c < f.collective) {
        Scenario s = sc;
        s.faults[i].collective = c;
        out.push_back(s);
      }
    if (f.rank > 0) {
      Scenario s = sc;
      s.faults[i].rank = 0;
      out.push_back(s);
    }
    for (int a : {0, f.allocation / 2, f.allocation - 1})
      if (f.kind == "oom" && a >= 0 && a < f.allocation) {
        Scenario s = sc;
        s.faults[i].allocation = a;
        out.push_back(s);
      }
    if (f.is_in_module() && f.step > 0) {
      Scenario s = sc;
      s.faults[i].step = 0;
      out.push_back(s);
    }
    if (f.kind == "straggler" && f.delay_ms > 1) {
      Scenario s = sc;
      s.faults[i].delay_ms = std::max(1, f.delay_ms / 2);
      out.push_back(s);
    }
  }

  // A smaller world: 1, its proper divisors, then world - 1.
  if (!options.keep_world && sc.world_size > 1) {
    std::vector<int> worlds;
    for (int d = 1; d < sc.world_size; ++d)
      if (sc.world_size % d == 0) worlds.push_back(d);
    if (std::find(worlds.begin(), worlds.end(), sc.world_size - 1) == worlds.end()) worlds.push_back(sc.world_size - 1);
    for (int w : worlds) {
      Scenario s = sc;
      s.world_size = w;
      out.push_back(s);
    }
  }

  // Fewer fully_shard groups: drop one non-root entry, the deepest first.
  std::vector<std::string> entries;
  for (const auto& [path, spec] : sc.fully_shard)
    if (!path.empty()) entries.push_back(path);
  std::stable_sort(entries.begin(), entries.end(),
                   [](const std::string& a, const std::string& b) { return depth(a) > depth(b); });
  for (const auto& path : entries) {
    Scenario s = sc;
    s.fully_shard.erase(path);
    out.push_back(s);
  }

  // AC off, then the simpler AC variant.
  for (std::size_t i = 0; i < n; ++i)
    if (sc.blocks[i].ac != ac::CheckpointMode::None) {
      Scenario s = sc;
      s.blocks[i].ac = ac::CheckpointMode::None;
      out.push_back(s);
    }
  for (std::size_t i = 0; i < n; ++i)
    if (sc.blocks[i].ac == ac::CheckpointMode::Reentrant) {
      Scenario s = sc;
      s.blocks[i].ac = ac::CheckpointMode::NonReentrant;
      out.push_back(s);
    }

  // No explicit lists: drop a whole list, then single entries of longer lists.
  using List = std::optional<std::vector<std::string>> ShardSpec::*;
  for (List list : {&ShardSpec::forward_prefetch, &ShardSpec::backward_prefetch})
    for (const auto& [path, spec] : sc.fully_shard)
      if (spec.*list) {
        Scenario s = sc;
        (s.fully_shard[path].*list).reset();
        out.push_back(s);
      }
  for (List list : {&ShardSpec::forward_prefetch, &ShardSpec::backward_prefetch})
    for (const auto& [path, spec] : sc.fully_shard)
      if (spec.*list && (spec.*list)->size() > 1)
        for (std::size_t k = 0; k < (spec.*list)->size(); ++k) {
          Scenario s = sc;
          auto& entries_of = *(s.fully_shard[path].*list);
          entries_of.erase(entries_of.begin() + static_cast<long>(k));
          out.push_back(s);
        }

  // Simpler meshes and options.
  if (sc.expert_shard_size != 0) {
    Scenario s = sc;
    s.expert_shard_size = 0;
    out.push_back(s);
  }
  for (const auto& [path, spec] : sc.fully_shard) {
    if (spec.reshard_after_forward.kind != fsdp::ReshardAfterForward::Kind::Auto) {
      Scenario s = sc;
      s.fully_shard[path].reshard_after_forward = fsdp::ReshardAfterForward::automatic();
      out.push_back(s);
    }
    if (spec.mesh != "dp") {
      Scenario s = sc;
      s.fully_shard[path].mesh = "dp";
      out.push_back(s);
    }
    if (spec.shard_dim != 0) {
      Scenario s = sc;
      s.fully_shard[path].shard_dim = 0;
      out.push_back(s);
    }
  }

  // Smaller dims and fewer steps.
  using Dim = int64_t harness::Dims::*;
  const std::vector<std::pair<Dim, std::vector<int64_t>>> dims = {
      {&harness::Dims::dim, {4, 6, 8, 12, 16}},
      {&harness::Dims::hidden, {4, 8, 12}},
      {&harness::Dims::experts, {1, 2, 3, 4}},
      {&harness::Dims::tokens, {2, 3, 4, 8}},
  };
  for (const auto& [field, usual] : dims)
    for (int64_t v : smaller(sc.dims.*field, usual)) {
      Scenario s = sc;
      s.dims.*field = v;
      out.push_back(s);
    }
  if (sc.steps > 1) {
    std::vector<int> steps = {1};
    if (sc.steps / 2 > 1) steps.push_back(sc.steps / 2);
    if (sc.steps - 1 > steps.back()) steps.push_back(sc.steps - 1);
    for (int st : steps) {
      Scenario s = sc;
      s.steps = st;
      out.push_back(s);
    }
  }

  // A plainer step and model: one micro-batch, one forward per backward, no evaluation forward,
  // no embedding, no final norm, no expert parallelism.
  auto plainer = [&](auto field, auto simplest) {
    if (sc.*field == simplest) return;
    Scenario s = sc;
    s.*field = simplest;
    out.push_back(s);
  };
  plainer(&Scenario::micro_batches, 1);
  plainer(&Scenario::forwards_per_backward, 1);
  plainer(&Scenario::eval_forward, false);
  plainer(&Scenario::embed, false);
  plainer(&Scenario::final_norm, false);
  plainer(&Scenario::expert_parallel, false);
  // Plainer precision: no policy, a float32 model, no upcast, reduce in float32.
  if (sc.mixed_precision) {
    Scenario s = sc;
    s.mixed_precision.reset();
    out.push_back(s);
    if (sc.mixed_precision->upcast_trainable) {
      s = sc;
      s.mixed_precision->upcast_trainable = false;
      out.push_back(s);
    }
  }
  plainer(&Scenario::dtype, std::string("float32"));
  if (sc.dims.top_k > 1) {
    Scenario s = sc;
    s.dims.top_k = 1;
    out.push_back(s);
  }
  if (sc.dims.heads > 1) {
    Scenario s = sc;
    s.dims.heads = 1;
    out.push_back(s);
  }

  // Simpler blocks: fewer LoRA adapters, no attention, no norms, grad on.
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < sc.blocks[i].lora.size(); ++k) {
      Scenario s = sc;
      s.blocks[i].lora.erase(s.blocks[i].lora.begin() + static_cast<long>(k));
      out.push_back(s);
    }
  using Flag = bool harness::BlockSpec::*;
  for (Flag flag : {&harness::BlockSpec::ac_wraps_hooks, &harness::BlockSpec::attention, &harness::BlockSpec::norm,
                    &harness::BlockSpec::no_grad})
    for (std::size_t i = 0; i < n; ++i)
      if (sc.blocks[i].*flag) {
        Scenario s = sc;
        s.blocks[i].*flag = false;
        out.push_back(s);
      }
  for (std::size_t i = 0; i < n; ++i)
    if (sc.blocks[i].ac == ac::CheckpointMode::SelectiveOps) {
      Scenario s = sc;
      s.blocks[i].ac = ac::CheckpointMode::NonReentrant;
      out.push_back(s);
    }
  for (std::size_t i = 0; i < n; ++i)
    if (sc.blocks[i].kind == harness::BlockSpec::Kind::RoutedMoe) {
      Scenario s = sc;
      s.blocks[i].kind = harness::BlockSpec::Kind::Moe;
      out.push_back(s);
    }

  // Simpler blocks and optimizer.
  for (std::size_t i = 0; i < n; ++i)
    if (sc.blocks[i].frozen) {
      Scenario s = sc;
      s.blocks[i].frozen = false;
      out.push_back(s);
    }
  for (std::size_t i = 0; i < n; ++i)
    if (sc.blocks[i].kind == harness::BlockSpec::Kind::Moe && sc.blocks[i].gated) {
      Scenario s = sc;
      s.blocks[i].gated = false;
      out.push_back(s);
    }
  for (std::size_t i = 0; i < n; ++i)
    if (sc.blocks[i].kind == harness::BlockSpec::Kind::Moe) {
      Scenario s = sc;
      s.blocks[i].kind = harness::BlockSpec::Kind::Mlp;
      out.push_back(s);
    }
  const train::OptimizerConfig defaults;
  const auto& o = sc.optimizer;
  if (o.kind != defaults.kind || o.lr != defaults.lr || o.beta1 != defaults.beta1 || o.beta2 != defaults.beta2 ||
      o.eps != defaults.eps || o.weight_decay != defaults.weight_decay) {
    Scenario s = sc;
    s.optimizer = defaults;
    out.push_back(s);
  }
  return out;
}

}  // namespace

std::vector<Scenario> structural_shrinks(const Scenario& sc, const StructuralShrinkOptions& options) {
  std::set<std::string> seen = {harness::to_json_text(sc)};
  std::vector<Scenario> out;
  for (Scenario& edit : raw_edits(sc, options)) {
    Scenario repaired = gen::repair(std::move(edit));
    if (!validates(repaired)) continue;
    if (!seen.insert(harness::to_json_text(repaired)).second) continue;
    out.push_back(std::move(repaired));
  }
  return out;
}

rc::Shrinkable<Scenario> shrinkable_from(const Scenario& scenario, StructuralShrinkOptions options) {
  return rc::shrinkable::shrinkRecur(scenario, [options](const Scenario& sc) {
    return rc::seq::fromContainer(structural_shrinks(sc, options));
  });
}

ShrinkResult shrink(const rc::Shrinkable<Scenario>& start, const FailurePredicate& fails, ShrinkBudget budget,
                    const ShrinkProgress& progress, std::optional<std::string> failure) {
  const auto t0 = Clock::now();
  ShrinkResult result;
  result.minimal = start.value();
  auto out_of_budget = [&] {
    return result.steps_tried >= budget.max_steps || seconds_since(t0) >= budget.max_seconds;
  };
  auto finish = [&]() -> ShrinkResult {
    result.elapsed_seconds = seconds_since(t0);
    return result;
  };

  // Scenarios already run, as JSON text: a run is seconds, a comparison microseconds.
  std::set<std::string> ran = {harness::to_json_text(result.minimal)};
  if (!failure) {
    if (out_of_budget()) {
      result.budget_exhausted = true;
      result.reproduced = false;
      return finish();
    }
    ++result.steps_tried;
    failure = fails(result.minimal);
    if (!failure) {
      result.reproduced = false;
      return finish();
    }
  }
  result.failure = *failure;

  rc::Shrinkable<Scenario> current = start;
  std::string current_text = harness::to_json_text(result.minimal);
  bool descended = true;
  while (descended) {
    descended = false;
    auto children = current.shrinks();
    while (auto child = children.next()) {
      Scenario candidate;
      try {
        candidate = child->value();
        candidate.validate();
      } catch (const std::exception&) {
        ++result.skipped;
        continue;
      }
      std::string text = harness::to_json_text(candidate);
      if (text == current_text) {
        // A shrink of a draw with no effect (a wrap flag of a module the block lacks, a list
        // under no explicit prefetch): same scenario, same verdict. Taking it costs no run and
        // clears the dead draw, so that a later shrink (MoE -> MLP) cannot bring it back to life.
        current = *child;
        ++result.unchanged_steps;
        descended = true;
        break;
      }
      if (!ran.insert(std::move(text)).second) {
        ++result.skipped;
        continue;
      }
      if (out_of_budget()) {
        result.budget_exhausted = true;
        return finish();
      }
      ++result.steps_tried;
      const std::optional<std::string> got = fails(candidate);
      if (got && *got == *failure) {
        current = *child;
        current_text = harness::to_json_text(candidate);
        result.minimal = std::move(candidate);
        ++result.steps_accepted;
        if (progress) progress(ShrinkStep{result.minimal, result.steps_accepted, result.steps_tried, seconds_since(t0)});
        descended = true;
        break;
      }
    }
  }
  return finish();
}

}  // namespace shardfuzz::fuzz
