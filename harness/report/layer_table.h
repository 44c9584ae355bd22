// The per-layer memory table of a backward pass: one row per block, read at that block's
// post_backward event — allocator bytes, ledger bytes, and the pending all-gathers held by groups
// that already finished backward (the seed leak's signature). `shardfuzz` prints it; the seed-leak
// test asserts on it.
#pragma once

#include "harness/run/run_record.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardfuzz::harness {

struct LayerRow {
  std::string group;            // "layers.i"
  int64_t allocated_bytes = 0;  // allocator probe at the block's post_backward
  int64_t ledger_bytes = 0;
  int64_t grad_bytes = 0;       // ledger: sharded gradients (all groups)
  int64_t pending_bytes = 0;    // every pending all-gather
  std::vector<std::string> stale;  // pending all-gathers of groups that already finished backward
  int64_t stale_bytes = 0;
};

// Rows in backward order (last block first) for `step` of one rank. Throws when a block's
// post_backward is missing from the timeline.
std::vector<LayerRow> layer_table(const RankRecord& rank, int step, int blocks);
// One row per post_backward event of any group, in the order they happened.
std::vector<LayerRow> group_table(const RankRecord& rank, int step);

std::string format_layer_table(const std::vector<LayerRow>& rows, const std::string& title);

}  // namespace shardfuzz::harness
