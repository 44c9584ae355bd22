// The group-level collectives of FSDP2: one flat all-gather per unshard (sum of padded shard
// numels x group size), its copy-out into each parameter, and the reduce-scatter of gradients.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/fsdp/sharded_param.h"
#include "runtime/memory/ledger.h"

#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <vector>

namespace shardfuzz::fsdp {

// An all-gather that was issued but not yet waited on (upstream AllGatherResult). The flat output
// lives exactly as long as this object; its ledger entry with it.
struct AllGatherResult {
  at::Tensor output;          // (group size, per-rank numel) rows
  std::vector<int64_t> split_sizes;  // per-param numel within a row
  memory::LedgerEntry entry;  // PendingAllGather (or none when wrapping a persistent buffer)
};

// Gathers `inputs` (each rank's per-param flat pieces, same sizes on every rank) over `comm`,
// cast to `dtype` on copy-in (mixed precision's param_dtype) straight into this rank's row of the
// output, which is then gathered in place: the output (ledgered PendingAllGather) is the only
// buffer that lives across the collective. A defined `persistent` buffer (world size 1) is reused
// instead of allocating.
std::unique_ptr<AllGatherResult> all_gather_flat(const std::vector<at::Tensor>& inputs, at::ScalarType dtype,
                                                 comm::Communicator* comm, const at::Tensor& persistent,
                                                 const std::shared_ptr<memory::Ledger>& ledger,
                                                 const std::string& group);

// Column block `i` of the result: (group size, split_sizes[i]).
at::Tensor gathered_piece(const AllGatherResult& result, std::size_t i);

// A reduce-scatter input kept alive until drained (upstream reduce_scatter_states).
struct ReduceScatterState {
  at::Tensor input;
  memory::LedgerEntry entry;
};

// HSDP's reduce output (upstream AllReduceState): the all-reduced gradient shard in reduce_dtype.
// When that differs from the parameters' dtype the sharded gradients are a cast copy, so this
// buffer is extra memory until it is dropped.
struct AllReduceState {
  at::Tensor output;
  memory::LedgerEntry entry;
};

struct ReduceResult {
  std::unique_ptr<ReduceScatterState> reduce_scatter;  // null when no parameter had a gradient
  std::unique_ptr<AllReduceState> all_reduce;          // HSDP with reduce_dtype != orig dtype only
  // With check_finite: the first parameter whose unsharded gradient (this rank's contribution)
  // holds a NaN or Inf, and the first whose reduced shard does (empty: none).
  std::string nonfinite_before;
  std::string nonfinite_after;
};

// Reduce-scatters the unsharded gradients of `params` (those that have one), cast to
// `reduce_dtype` (unset: the gradients' own dtype), with AVG over `shard_comm`, then all-reduces
// AVG over `replicate_comm` (HSDP) when given, and accumulates into their sharded gradients in
// each parameter's dtype. divide_factor > 0: SUM both, then divide by it instead. Returns the
// kept-alive input (none when no parameter had a gradient: upstream skips the collective) and,
// for HSDP, the reduce output when it is a buffer of its own.
ReduceResult reduce_scatter_grads(std::vector<ShardedParam>& params, comm::Communicator* shard_comm,
                                  comm::Communicator* replicate_comm, const std::shared_ptr<memory::Ledger>& ledger,
                                  const std::string& group, std::optional<at::ScalarType> reduce_dtype = std::nullopt,
                                  double divide_factor = 0, bool check_finite = false);

}  // namespace shardfuzz::fsdp
