// Argument checks and signatures every collective backend applies the same way, so that each
// backend rejects the same calls with the same words. Internal to comm/.
#pragma once

#include "runtime/comm/communicator.h"

#include <ATen/core/Tensor.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace shardfuzz::comm::detail {

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

const char* byte_begin(const at::Tensor& t);
const char* byte_end(const at::Tensor& t);
bool overlaps(const at::Tensor& a, const at::Tensor& b);

// Resolves one side of all_to_all_single's split sizes (`given`, empty: equal) into rows per peer
// of the `n` in the group; returns why it cannot, or "".
std::string resolve_splits(const std::vector<int64_t>& given, const at::Tensor& t, int n, const char* what,
                           std::vector<int64_t>& rows);

}  // namespace shardfuzz::comm::detail
