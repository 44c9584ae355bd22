// Edits of the fully_shard placements: fewer groups, default options per group.
#include "fuzz/shrink/edits/helpers.h"

#include <algorithm>

namespace shardfuzz::fuzz::shrinking::edits {

namespace {

int depth(const std::string& path) {
  return path.empty() ? 0 : 1 + static_cast<int>(std::count(path.begin(), path.end(), '.'));
}

}  // namespace

// Drop one non-root fully_shard entry, the deepest first.
Candidates drop_a_group(const Scenario& sc) {
  std::vector<std::string> paths;
  for (const auto& [path, spec] : sc.fully_shard)
    if (!path.empty()) paths.push_back(path);
  std::stable_sort(paths.begin(), paths.end(),
                   [](const std::string& a, const std::string& b) { return depth(a) > depth(b); });
  Candidates out;
  for (const auto& path : paths) out.push_back(with(sc, [&](Scenario& s) { s.fully_shard.erase(path); }));
  return out;
}

// Entry by entry: reshard_after_forward auto, mesh dp, shard_dim 0.
Candidates default_placement_options(const Scenario& sc) {
  Candidates out;
  auto push = [&](const std::string& path, auto change) {
    out.push_back(with(sc, [&](Scenario& s) { change(s.fully_shard[path]); }));
  };
  for (const auto& [path, spec] : sc.fully_shard) {
    if (spec.reshard_after_forward.kind != fsdp::ReshardAfterForward::Kind::Auto)
      push(path, [](harness::ShardSpec& s) { s.reshard_after_forward = fsdp::ReshardAfterForward::automatic(); });
    if (spec.mesh != "dp") push(path, [](harness::ShardSpec& s) { s.mesh = "dp"; });
    if (spec.shard_dim != 0) push(path, [](harness::ShardSpec& s) { s.shard_dim = 0; });
  }
  return out;
}

}  // namespace shardfuzz::fuzz::shrinking::edits
