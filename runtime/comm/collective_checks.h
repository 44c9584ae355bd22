// What one rank brings to a collective, described the same way by every backend (ThreadWorld,
// StoreWorld, NCCL): its signature, which must match on every rank, and why its arguments are
// invalid, if they are — so every backend rejects the same calls with the same words. Internal to
// comm/.
#pragma once

#include "runtime/comm/communicator.h"

#include <ATen/core/Tensor.h>

#include <initializer_list>
#include <cstdint>
#include <string>
#include <vector>

namespace shardfuzz::comm::detail {

// One rank's call of one collective. ThreadWorld publishes only `input`'s pointer and the
// metadata (peers read the buffer in place, so the owner keeps it alive until GroupState::finish
// returns); StoreWorld sends the metadata with a host copy of the buffer.
struct Call {
  std::string op;         // "all_reduce"
  std::string signature;  // must be identical on every rank, e.g. "all_reduce(shape=[4], float, sum)"
  std::string invalid;    // non-empty: why this rank's arguments were rejected
  const void* input = nullptr;
  std::vector<int64_t> send_rows, recv_rows;  // all_to_all_single, resolved per peer
  int color = -1, key = 0;                    // split
  std::string split_name;
};

// The calls of each collective, checked (`n`: the group's size). Backends add their own checks
// (ThreadWorld: how input and output may overlap) to `invalid` when it is still empty.
Call all_gather_call(const at::Tensor& output, const at::Tensor& input, int n);
Call reduce_scatter_call(const at::Tensor& output, const at::Tensor& input, ReduceOp op, int n);
Call all_reduce_call(const at::Tensor& tensor, ReduceOp op);
Call all_to_all_call(const at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& output_split_sizes,
                     const std::vector<int64_t>& input_split_sizes, int n);
Call broadcast_call(const at::Tensor& tensor, int root, int n);
Call barrier_call();
Call split_call(int color, int key, const std::string& name);

std::string dtype_name(at::ScalarType t);
std::string shape_str(at::IntArrayRef sizes);

// Why `t` cannot be a collective buffer (`role`: "input", "output"), or "" if it can.
std::string tensor_problem(const at::Tensor& t, const char* role);
// The first non-empty problem, or "".
std::string first_problem(std::initializer_list<std::string> problems);
// An output that differs from its input in dtype or device.
std::string pair_problem(const at::Tensor& output, const at::Tensor& input);
std::string reduce_problem(const at::Tensor& t, ReduceOp op);

// Signature pieces that stay printable for undefined tensors, so a rank with bad arguments still
// publishes something readable; the device is part of them off the CPU.
std::string on_device(const at::Tensor& t);
std::string numel_and_dtype(const at::Tensor& t);
std::string shape_and_dtype(const at::Tensor& t);

// A sum over `n` ranks made the ReduceOp's result: Avg divides (truncating integers, as NCCL's
// integer avg does); Sum leaves it.
void finish_reduction(at::Tensor& sum, ReduceOp op, int64_t n);

// Where a tensor's bytes lie: its address, or on the meta device (a shape-only run: no data) its
// byte offset in its storage, so that overlap within one storage is still seen.
uintptr_t byte_begin(const at::Tensor& t);
uintptr_t byte_end(const at::Tensor& t);
bool overlaps(const at::Tensor& a, const at::Tensor& b);
// What peers read from: the tensor's data, or null for a meta tensor (nothing to move).
inline const void* peer_input(const at::Tensor& t) { return t.is_meta() ? nullptr : t.data_ptr(); }

// Resolves one side of all_to_all_single's split sizes (`given`, empty: equal) into rows per peer
// of the `n` in the group; returns why it cannot, or "".
std::string resolve_splits(const std::vector<int64_t>& given, const at::Tensor& t, int n, const char* what,
                           std::vector<int64_t>& rows);

}  // namespace shardfuzz::comm::detail
