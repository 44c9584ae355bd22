// Edits of the explicit prefetch lists: drop a whole list, then single entries of longer lists;
// forward lists before backward ones.
#include "fuzz/shrink/edits/helpers.h"

namespace shardfuzz::fuzz::shrinking::edits {

namespace {

using List = std::optional<std::vector<std::string>> harness::ShardSpec::*;
constexpr List kLists[] = {&harness::ShardSpec::forward_prefetch, &harness::ShardSpec::backward_prefetch};

}  // namespace

Candidates drop_a_prefetch_list(const Scenario& sc) {
  Candidates out;
  for (List list : kLists)
    for (const auto& [path, spec] : sc.fully_shard)
      if (spec.*list) out.push_back(with(sc, [&, p = path](Scenario& s) { (s.fully_shard[p].*list).reset(); }));
  return out;
}

Candidates drop_a_prefetch_entry(const Scenario& sc) {
  Candidates out;
  for (List list : kLists)
    for (const auto& [path, spec] : sc.fully_shard)
      if (spec.*list && (spec.*list)->size() > 1)
        for (std::size_t k = 0; k < (spec.*list)->size(); ++k)
          out.push_back(with(sc, [&, p = path](Scenario& s) {
            auto& entries = *(s.fully_shard[p].*list);
            entries.erase(entries.begin() + static_cast<long>(k));
          }));
  return out;
}

}  // namespace shardfuzz::fuzz::shrinking::edits
