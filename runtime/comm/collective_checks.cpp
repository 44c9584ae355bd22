// Argument checks and signatures shared by the collective backends (ThreadWorld, StoreWorld).
#include "runtime/comm/collective_checks.h"

#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>
#include <numeric>
#include <sstream>

namespace shardfuzz::comm::detail {

std::string dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "float";
    case at::kDouble: return "double";
    case at::kHalf: return "half";
    case at::kBFloat16: return "bfloat16";
    case at::kLong: return "int64";
    case at::kInt: return "int32";
    case at::kShort: return "int16";
    case at::kChar: return "int8";
    case at::kByte: return "uint8";
    case at::kBool: return "bool";
    default: {
      std::string name = c10::toString(t);
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      return name;
    }
  }
}

std::string shape_str(at::IntArrayRef sizes) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < sizes.size(); ++i) os << (i ? ", " : "") << sizes[i];
  os << "]";
  return os.str();
}

// Why `t` cannot be a collective buffer, or "" if it can.
std::string tensor_problem(const at::Tensor& t, const char* role) {
  const std::string r = role;
  if (!t.defined()) return r + " is undefined";
  if (t.layout() != at::kStrided) return r + " is not a strided (dense) tensor";
  if (!t.device().is_cpu() && !t.device().is_cuda() && !t.is_meta())
    return r + " is on " + t.device().str() + ", ThreadWorld needs CPU, CUDA or (shape-only) meta tensors";
  if (!t.is_contiguous())
    return r + " is not contiguous (shape " + shape_str(t.sizes()) + ", strides " + shape_str(t.strides()) + ")";
  return "";
}

std::string first_problem(std::initializer_list<std::string> problems) {
  for (const auto& p : problems)
    if (!p.empty()) return p;
  return "";
}

// Signature pieces that stay printable for undefined tensors, so a rank with bad arguments still
// publishes something readable.
// An output that differs from its input in dtype or device.
std::string pair_problem(const at::Tensor& output, const at::Tensor& input) {
  if (output.scalar_type() != input.scalar_type())
    return "output dtype " + dtype_name(output.scalar_type()) + " differs from input dtype " + dtype_name(input.scalar_type());
  if (output.device() != input.device())
    return "output is on " + output.device().str() + " but input is on " + input.device().str();
  return "";
}

// Ranks on different devices mismatch: the device is part of the signature off the CPU.
std::string on_device(const at::Tensor& t) { return t.device().is_cpu() ? "" : ", " + t.device().str(); }
std::string numel_and_dtype(const at::Tensor& t) {
  if (!t.defined()) return "undefined";
  return "numel=" + std::to_string(t.numel()) + ", " + dtype_name(t.scalar_type()) + on_device(t);
}
std::string shape_and_dtype(const at::Tensor& t) {
  if (!t.defined()) return "undefined";
  return "shape=" + shape_str(t.sizes()) + ", " + dtype_name(t.scalar_type()) + on_device(t);
}

uintptr_t byte_begin(const at::Tensor& t) {
  if (t.is_meta()) return static_cast<uintptr_t>(t.storage_offset() * t.element_size());
  return reinterpret_cast<uintptr_t>(t.data_ptr());
}
uintptr_t byte_end(const at::Tensor& t) { return byte_begin(t) + static_cast<uintptr_t>(t.numel() * t.element_size()); }
bool overlaps(const at::Tensor& a, const at::Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  if ((a.is_meta() || b.is_meta()) && !a.is_alias_of(b)) return false;  // no addresses: one storage or none
  return byte_begin(a) < byte_end(b) && byte_begin(b) < byte_end(a);
}

std::string reduce_problem(const at::Tensor& t, ReduceOp op) {
  if (t.defined() && op == ReduceOp::Avg && t.scalar_type() == at::kBool) return "avg is not defined for bool";
  return "";
}

// Resolves one side of all_to_all_single's split sizes into rows per peer.
std::string resolve_splits(const std::vector<int64_t>& given, const at::Tensor& t, int n, const char* what,
                           std::vector<int64_t>& rows) {
  const int64_t total = t.size(0);
  const std::string name = what;
  if (given.empty()) {
    if (total % n != 0)
      return name + " is empty (equal split) but " + std::to_string(total) + " rows do not divide by group size " +
             std::to_string(n);
    rows.assign(n, total / n);
    return "";
  }
  if (static_cast<int>(given.size()) != n)
    return name + " has " + std::to_string(given.size()) + " entries, expected group size " + std::to_string(n);
  for (int i = 0; i < n; ++i)
    if (given[i] < 0) return name + "[" + std::to_string(i) + "] is " + std::to_string(given[i]);
  const int64_t sum = std::accumulate(given.begin(), given.end(), int64_t{0});
  if (sum != total)
    return name + " sum to " + std::to_string(sum) + " but the tensor has " + std::to_string(total) + " rows";
  rows = given;
  return "";
}


void finish_reduction(at::Tensor& sum, ReduceOp op, int64_t n) {
  if (op != ReduceOp::Avg || sum.numel() == 0) return;
  if (c10::isIntegralType(sum.scalar_type(), /*includeBool=*/false))
    sum.div_(n, "trunc");
  else
    sum.div_(n);
}

Call all_gather_call(const at::Tensor& output, const at::Tensor& input, int n) {
  Call call;
  call.op = "all_gather_into_tensor";
  call.signature = call.op + "(" + numel_and_dtype(input) + ")";
  call.invalid = first_problem({tensor_problem(input, "input"), tensor_problem(output, "output")});
  if (call.invalid.empty()) call.invalid = pair_problem(output, input);
  if (call.invalid.empty() && output.numel() != input.numel() * n)
    call.invalid = "output has numel " + std::to_string(output.numel()) + ", expected " +
                   std::to_string(input.numel() * n) + " (input numel " + std::to_string(input.numel()) +
                   " x group size " + std::to_string(n) + ")";
  return call;
}

Call reduce_scatter_call(const at::Tensor& output, const at::Tensor& input, ReduceOp op, int n) {
  Call call;
  call.op = "reduce_scatter_tensor";
  call.signature = call.op + "(" + numel_and_dtype(input) + ", " + to_string(op) + ")";
  call.invalid =
      first_problem({tensor_problem(input, "input"), tensor_problem(output, "output"), reduce_problem(input, op)});
  if (call.invalid.empty()) call.invalid = pair_problem(output, input);
  if (call.invalid.empty() && input.numel() != output.numel() * n)
    call.invalid = "input has numel " + std::to_string(input.numel()) + ", expected " +
                   std::to_string(output.numel() * n) + " (output numel " + std::to_string(output.numel()) +
                   " x group size " + std::to_string(n) + ")";
  return call;
}

Call all_reduce_call(const at::Tensor& tensor, ReduceOp op) {
  Call call;
  call.op = "all_reduce";
  call.signature = call.op + "(" + shape_and_dtype(tensor) + ", " + to_string(op) + ")";
  call.invalid = first_problem({tensor_problem(tensor, "tensor"), reduce_problem(tensor, op)});
  return call;
}

Call all_to_all_call(const at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& output_split_sizes,
                     const std::vector<int64_t>& input_split_sizes, int n) {
  Call call;
  call.op = "all_to_all_single";
  call.invalid = first_problem({tensor_problem(input, "input"), tensor_problem(output, "output")});
  if (call.invalid.empty() && (input.dim() == 0 || output.dim() == 0))
    call.invalid = "input and output need a dim 0 to split along";
  call.signature = call.op + "(" +
                   (call.invalid.empty() ? "row_shape=" + shape_str(input.sizes().slice(1)) + ", " +
                                               dtype_name(input.scalar_type()) + on_device(input)
                                         : std::string("invalid")) +
                   ")";
  if (call.invalid.empty()) call.invalid = pair_problem(output, input);
  if (call.invalid.empty() && output.sizes().slice(1) != input.sizes().slice(1))
    call.invalid = "output rows have shape " + shape_str(output.sizes().slice(1)) + " but input rows have shape " +
                   shape_str(input.sizes().slice(1));
  if (call.invalid.empty())
    call.invalid = first_problem({resolve_splits(input_split_sizes, input, n, "input_split_sizes", call.send_rows),
                                  resolve_splits(output_split_sizes, output, n, "output_split_sizes", call.recv_rows)});
  return call;
}

Call broadcast_call(const at::Tensor& tensor, int root, int n) {
  Call call;
  call.op = "broadcast";
  call.signature = call.op + "(" + shape_and_dtype(tensor) + ", root=" + std::to_string(root) + ")";
  call.invalid = tensor_problem(tensor, "tensor");
  if (call.invalid.empty() && (root < 0 || root >= n))
    call.invalid = "root " + std::to_string(root) + " is outside the group's ranks 0.." + std::to_string(n - 1);
  return call;
}

Call barrier_call() {
  Call call;
  call.op = "barrier";
  call.signature = "barrier()";
  return call;
}

Call split_call(int color, int key, const std::string& name) {
  Call call;
  call.op = "split";
  call.signature = "split()";
  call.color = color;
  call.key = key;
  call.split_name = name;
  return call;
}

}  // namespace shardfuzz::comm::detail
