// The mutations (fuzz/mutate/mutate.h). Each takes the scenario and the draw, changes one thing and
// says what; repair() makes the combination legal afterwards.
#include "fuzz/mutate/mutate.h"

#include "fuzz/gen/generate.h"
#include "fuzz/gen/repair.h"
#include "fuzz/shrink/edits.h"
#include "harness/scenario/scenario_json.h"

#include <random>

namespace shardfuzz::fuzz {
namespace {

using harness::BlockSpec;
using harness::Scenario;
using harness::ShardSpec;
using Rng = std::mt19937_64;

template <class T>
const T& pick(const std::vector<T>& v, Rng& rng) {
  return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)];
}
int between(int lo, int hi, Rng& rng) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
std::string block_path(std::size_t i) { return "layers." + std::to_string(i); }
std::string shown(const std::string& path) { return path.empty() ? "root" : path; }

std::vector<std::string> group_paths(const Scenario& s, bool with_root) {
  std::vector<std::string> out;
  for (const auto& [path, spec] : s.fully_shard)
    if (with_root || !path.empty()) out.push_back(path);
  return out;
}

std::string flip_ac(Scenario& s, Rng& rng) {
  const std::size_t i = std::uniform_int_distribution<std::size_t>(0, s.blocks.size() - 1)(rng);
  BlockSpec& b = s.blocks[i];
  const auto before = b.ac;
  while (b.ac == before) b.ac = ac::kCheckpointModeNames[static_cast<std::size_t>(between(0, 3, rng))].first;
  if (between(0, 3, rng) == 0) b.ac_wraps_hooks = !b.ac_wraps_hooks;
  return "flip an AC mode (" + block_path(i) + ")";
}

std::string add_group(Scenario& s, Rng& rng) {
  std::vector<std::string> free;
  for (const auto& p : s.module_paths())
    if (!s.fully_shard.count(p)) free.push_back(p);
  if (free.empty()) return "";
  const std::string path = pick(free, rng);
  ShardSpec spec;
  if (path.size() > 12 && path.compare(path.size() - 12, 12, ".moe.experts") == 0 && between(0, 1, rng)) spec.mesh = "experts";
  s.fully_shard[path] = spec;
  return "add a group (" + path + ")";
}

std::string drop_group(Scenario& s, Rng& rng) {
  const auto paths = group_paths(s, false);
  if (paths.empty()) return "";
  const std::string path = pick(paths, rng);
  s.fully_shard.erase(path);
  return "drop a group (" + path + ")";
}

std::string change_prefetch_list(Scenario& s, Rng& rng) {
  const auto paths = group_paths(s, true);
  const std::string issuer = pick(paths, rng);
  ShardSpec& spec = s.fully_shard.at(issuer);
  auto& list = between(0, 1, rng) ? spec.backward_prefetch : spec.forward_prefetch;
  const int shape = between(0, 4, rng);
  if (shape == 0) {
    list.reset();
  } else if (shape == 1) {
    list = std::vector<std::string>{};
  } else {
    std::vector<std::string> targets;
    for (int n = between(1, 2, rng); n > 0; --n) targets.push_back(between(0, 5, rng) == 0 ? "self" : pick(paths, rng));
    list = targets;
  }
  return "change a prefetch list (" + shown(issuer) + ")";
}

std::string change_reshard(Scenario& s, Rng& rng) {
  const auto paths = group_paths(s, true);
  const std::string path = pick(paths, rng);
  using R = fsdp::ReshardAfterForward;
  const R choices[] = {R::automatic(), R::yes(), R::no(), R::ranks(2)};
  s.fully_shard.at(path).reshard_after_forward = choices[between(0, 3, rng)];
  return "change reshard_after_forward (" + shown(path) + ")";
}

// A copy of a block appended, with copies of the fully_shard entries inside it.
std::string add_block(Scenario& s, Rng& rng) {
  const std::size_t i = std::uniform_int_distribution<std::size_t>(0, s.blocks.size() - 1)(rng);
  const std::string from = block_path(i), to = block_path(s.blocks.size());
  s.blocks.push_back(s.blocks[i]);
  std::map<std::string, ShardSpec> added;
  for (const auto& [path, spec] : s.fully_shard)
    if (path == from || path.rfind(from + ".", 0) == 0) added[to + path.substr(from.size())] = spec;
  s.fully_shard.insert(added.begin(), added.end());
  return "add a block (" + to + " as " + from + ")";
}

std::string change_block_options(Scenario& s, Rng& rng) {
  const std::size_t i = std::uniform_int_distribution<std::size_t>(0, s.blocks.size() - 1)(rng);
  BlockSpec& b = s.blocks[i];
  switch (between(0, 5, rng)) {
    case 0: b.frozen = !b.frozen; break;
    case 1: b.no_grad = !b.no_grad; break;
    case 2: b.attention = !b.attention; break;
    case 3: b.norm = !b.norm; break;
    case 4: b.gated = !b.gated; break;
    default: b.kind = static_cast<BlockSpec::Kind>((static_cast<int>(b.kind) + between(1, 2, rng)) % 3); break;
  }
  return "change a block's options (" + block_path(i) + ")";
}

std::string change_step_shape(Scenario& s, Rng& rng) {
  switch (between(0, 4, rng)) {
    case 0: s.steps = between(1, 4, rng); break;
    case 1: s.micro_batches = between(1, 3, rng); break;
    case 2: s.forwards_per_backward = between(1, 2, rng); break;
    case 3: s.eval_forward = !s.eval_forward; break;
    default: s.input_requires_grad = !s.input_requires_grad; break;
  }
  return "change the step's shape";
}

std::string change_world(Scenario& s, Rng& rng, const GenConfig& config) {
  if (config.world > 0) return "";
  static const std::vector<int> worlds = {1, 2, 3, 4, 8};
  s.world_size = std::min(pick(worlds, rng), config.max_world);
  s.expert_shard_size = between(0, 2, rng);
  return "change the world (" + std::to_string(s.world_size) + ")";
}

std::string splice_block(Scenario& s, Rng& rng, const GenConfig& config) {
  const Scenario fresh = generate(config, rng(), 50);
  const std::size_t i = std::uniform_int_distribution<std::size_t>(0, s.blocks.size() - 1)(rng);
  const std::size_t j = std::uniform_int_distribution<std::size_t>(0, fresh.blocks.size() - 1)(rng);
  s.blocks[i] = fresh.blocks[j];
  return "splice a block (" + block_path(i) + " from a fresh draw)";
}

std::string shrink_step(Scenario& s, Rng& rng) {
  const auto children = shrinking::structural_candidates(s);
  if (children.empty()) return "";
  const auto& child = pick(children, rng);
  s = child.value;
  return "take a shrink step (" + child.edit + ")";
}

std::string one_mutation(Scenario& s, Rng& rng, const GenConfig& config) {
  switch (between(0, 10, rng)) {
    case 0: return flip_ac(s, rng);
    case 1: return add_group(s, rng);
    case 2: return drop_group(s, rng);
    case 3: return change_prefetch_list(s, rng);
    case 4: return change_reshard(s, rng);
    case 5: return add_block(s, rng);
    case 6: return change_block_options(s, rng);
    case 7: return change_step_shape(s, rng);
    case 8: return change_world(s, rng, config);
    case 9: return splice_block(s, rng, config);
    default: return shrink_step(s, rng);
  }
}

}  // namespace

const std::vector<std::string>& mutation_names() {
  static const std::vector<std::string> names = {
      "flip an AC mode",           "add a group",        "drop a group",    "change a prefetch list",
      "change reshard_after_forward", "add a block",     "change a block's options", "change the step's shape",
      "change the world",          "splice a block",     "take a shrink step"};
  return names;
}

Mutant mutate(const Scenario& parent, uint64_t seed, const GenConfig& config) {
  Rng rng(seed);
  const std::string parent_text = harness::to_json_text(parent);
  for (int attempt = 0; attempt < 10; ++attempt) {
    Mutant m{parent, {}};
    for (int n = between(1, 3, rng); n > 0; --n) {
      const std::string edit = one_mutation(m.scenario, rng, config);
      if (!edit.empty()) m.edits.push_back(edit);
    }
    if (m.edits.empty()) continue;
    if (config.world > 0) m.scenario.world_size = config.world;  // a shrink step may have changed it
    m.scenario = gen::repair(std::move(m.scenario));
    if (!config.profile.empty()) m.scenario.profile = semantics::Profile::named(config.profile);
    try {
      m.scenario.validate();
    } catch (const std::invalid_argument&) {
      continue;
    }
    m.scenario.name = parent.name;
    if (harness::to_json_text(m.scenario) == parent_text) continue;
    m.scenario.name = "mutant of " + parent.name;
    return m;
  }
  return {generate(config, seed, 50), {"fresh draw"}};
}

}  // namespace shardfuzz::fuzz
