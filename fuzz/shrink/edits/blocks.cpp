// Edits of the block list: drop blocks, renumbering the rest with their fully_shard entries and
// prefetch lists.
#include "fuzz/shrink/edits/all.h"

#include <cctype>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace shardfuzz::fuzz::shrinking::edits {

namespace {

using harness::split_block_path;

// Paths after dropping blocks: new_index[i] is block i's new index, -1 when it is dropped.
struct Renumbering {
  std::vector<long> new_index;

  // nullopt: the path names a dropped block; else the renumbered path.
  std::optional<std::string> path(const std::string& p) const {
    auto parts = split_block_path(p);
    if (!parts) return p;
    if (parts->first >= new_index.size()) return p;  // not a block of this model: left to repair
    if (new_index[parts->first] < 0) return std::nullopt;
    return "layers." + std::to_string(new_index[parts->first]) + parts->second;
  }

  void list(std::optional<std::vector<std::string>>& entries) const {
    if (!entries) return;
    std::vector<std::string> kept;
    for (const auto& entry : *entries)
      if (entry == "self") kept.push_back(entry);
      else if (auto renamed = path(entry)) kept.push_back(*renamed);
    *entries = std::move(kept);
  }
};

// Removes the blocks in `dropped`, renumbering the rest; fully_shard entries and prefetch entries
// of dropped blocks go with them.
Scenario without_blocks(const Scenario& sc, const std::set<std::size_t>& dropped) {
  Renumbering renumber{std::vector<long>(sc.blocks.size(), -1)};
  Scenario out = sc;
  out.blocks.clear();
  for (std::size_t i = 0; i < sc.blocks.size(); ++i)
    if (!dropped.count(i)) {
      renumber.new_index[i] = static_cast<long>(out.blocks.size());
      out.blocks.push_back(sc.blocks[i]);
    }
  out.fully_shard.clear();
  for (const auto& [path, spec] : sc.fully_shard) {
    auto renamed = renumber.path(path);
    if (!renamed) continue;
    harness::ShardSpec s = spec;
    renumber.list(s.forward_prefetch);
    renumber.list(s.backward_prefetch);
    out.fully_shard[*renamed] = std::move(s);
  }
  return out;
}

}  // namespace

// Fewer blocks: the largest runs of consecutive blocks first, keeping at least one block.
Candidates drop_blocks(const Scenario& sc) {
  const std::size_t n = sc.blocks.size();
  Candidates out;
  for (std::size_t len = n > 0 ? n - 1 : 0; len >= 1; --len)
    for (std::size_t start = 0; start + len <= n; ++start) {
      std::set<std::size_t> dropped;
      for (std::size_t i = start; i < start + len; ++i) dropped.insert(i);
      out.push_back(without_blocks(sc, dropped));
    }
  return out;
}

}  // namespace shardfuzz::fuzz::shrinking::edits
