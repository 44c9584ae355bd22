// What each FSDP group's buffers weigh on one rank, derived from the run's parameter records (their
// padded shards, all-gather sizes and dtypes) and the scenario's mixed precision: never from the
// runtime's ledger, which is what the lifetime model judges.
#pragma once

#include "harness/run/run_record.h"
#include "harness/scenario/scenario.h"

#include <cstdint>
#include <map>
#include <string>

namespace shardfuzz::harness::lifetimes {

struct GroupSizes {
  int64_t sharded = 0;      // every padded local shard, in its stored dtype
  int64_t unsharded = 0;    // every parameter's unsharded (padded x shard size) storage, in its param dtype
  int64_t all_gather = 0;   // the one flat all-gather output: shard size x the summed padded numels, in the
                            // first parameter's param dtype (upstream gathers a mixed group as bytes)
  int64_t grad_bound = 0;   // sharded gradients of the trainable parameters (padded), at most
  int64_t reduce_scatter_bound = 0;  // one reduce-scatter input: trainable unsharded numel in the reduce dtype
  int64_t optimizer_bound = 0;       // AdamW's two moments of the trainable shards, at most
  int shard_size = 1;       // ranks the group is sharded over
  // Its reshard at the end of forward keeps the unsharded parameters (reshard_after_forward False
  // or 1, "auto" on the root; the root whatever was asked where the profile clamps it).
  bool keeps_after_forward = false;
};

// Whether the group of module `path` ("" or "root": the root) keeps its parameters after forward,
// from the scenario's fully_shard options and the profile (section 7).
bool keeps_after_forward(const Scenario& sc, const std::string& group);

// By group name, for one rank.
std::map<std::string, GroupSizes> group_sizes(const Scenario& sc, const RankRecord& r);

}  // namespace shardfuzz::harness::lifetimes
