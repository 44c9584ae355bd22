#include "harness/lifetimes/group_sizes.h"

#include <c10/core/ScalarType.h>

namespace shardfuzz::harness::lifetimes {

bool keeps_after_forward(const Scenario& sc, const std::string& group) {
  const std::string path = group == "root" ? "" : group;
  const auto it = sc.fully_shard.find(path);
  if (it == sc.fully_shard.end()) return false;
  if (path.empty() && sc.profile.root_never_reshards_after_forward) return true;
  const auto& raf = it->second.reshard_after_forward;
  using Kind = fsdp::ReshardAfterForward::Kind;
  switch (raf.kind) {
    case Kind::True: return false;
    case Kind::False: return true;
    case Kind::Int: return raf.n == 1;
    case Kind::Auto: return path.empty();  // upstream: the root's None means False
  }
  return false;
}

std::map<std::string, GroupSizes> group_sizes(const Scenario& sc, const RankRecord& r) {
  const auto& mp = sc.mixed_precision;
  // Gradients are reduced in reduce_dtype (param_dtype when it is not set; the parameters' own dtype
  // without mixed precision).
  const int64_t reduced_element =
      mp ? static_cast<int64_t>(c10::elementSize(scalar_type_of(mp->reduce_dtype.value_or(mp->param_dtype)))) : 0;
  std::map<std::string, GroupSizes> sizes;
  std::map<std::string, int64_t> first_element;  // the all-gather's dtype: the group's first parameter's
  for (const ShardRecord& s : r.shards) {
    GroupSizes& g = sizes[s.group];
    g.keeps_after_forward = keeps_after_forward(sc, s.group);
    const int64_t stored_element = s.local.defined() ? static_cast<int64_t>(s.local.element_size()) : 0;
    const int64_t padded_numel = stored_element > 0 ? s.padded_bytes / stored_element : 0;
    const int64_t unsharded_numel = padded_numel * s.shard_size;
    const int64_t unsharded_element = unsharded_numel > 0 ? s.unsharded_bytes / unsharded_numel : 0;
    first_element.emplace(s.group, unsharded_element);
    g.shard_size = s.shard_size;
    g.sharded += s.padded_bytes;
    g.unsharded += s.unsharded_bytes;
    g.all_gather += unsharded_numel * first_element[s.group];
    if (!s.requires_grad) continue;
    g.grad_bound += s.padded_bytes;
    g.optimizer_bound += 2 * s.padded_bytes;
    g.reduce_scatter_bound += unsharded_numel * (reduced_element > 0 ? reduced_element : unsharded_element);
  }
  return sizes;
}

}  // namespace shardfuzz::harness::lifetimes
