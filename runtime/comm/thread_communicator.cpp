// ThreadWorld's collectives. Peers' buffers are wrapped with from_blob instead of viewed through
// their at::Tensor, so no rank ever touches another rank's TensorImpl or autograd metadata (the
// same contract as NCCL, which sees only device pointers).
#include "runtime/comm/thread_communicator.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <c10/util/accumulate.h>

#include <algorithm>
#include <cctype>
#include <numeric>
#include <sstream>

namespace shardfuzz::comm::detail {
namespace {

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
  if (!t.device().is_cpu()) return r + " is on " + t.device().str() + ", ThreadWorld needs CPU tensors";
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
std::string numel_and_dtype(const at::Tensor& t) {
  if (!t.defined()) return "undefined";
  return "numel=" + std::to_string(t.numel()) + ", " + dtype_name(t.scalar_type());
}
std::string shape_and_dtype(const at::Tensor& t) {
  if (!t.defined()) return "undefined";
  return "shape=" + shape_str(t.sizes()) + ", " + dtype_name(t.scalar_type());
}

const char* byte_begin(const at::Tensor& t) { return static_cast<const char*>(t.data_ptr()); }
const char* byte_end(const at::Tensor& t) { return byte_begin(t) + t.numel() * t.element_size(); }
bool overlaps(const at::Tensor& a, const at::Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  return byte_begin(a) < byte_end(b) && byte_begin(b) < byte_end(a);
}

// A flat, autograd-free alias of `numel` elements at `data` (another rank's buffer or our own).
at::Tensor alias(const void* data, int64_t offset, int64_t numel, at::ScalarType dtype) {
  auto* base = static_cast<char*>(const_cast<void*>(data)) + offset * c10::elementSize(dtype);
  return at::from_blob(base, {numel}, at::TensorOptions().dtype(dtype).device(at::kCPU));
}
at::Tensor alias(const at::Tensor& t) { return alias(t.data_ptr(), 0, t.numel(), t.scalar_type()); }

// Sums chunk [offset, offset+numel) of every rank's input into `target`, in rank order 0..n-1 so
// that every rank (and every run) rounds identically.
void reduce_into(at::Tensor& target, const std::vector<Call>& calls, int64_t offset, at::ScalarType dtype,
                 ReduceOp op) {
  const int64_t numel = target.numel();
  if (numel == 0) return;
  target.copy_(alias(calls[0].input, offset, numel, dtype));
  for (size_t r = 1; r < calls.size(); ++r) target.add_(alias(calls[r].input, offset, numel, dtype));
  if (op == ReduceOp::Avg) {
    const auto n = static_cast<int64_t>(calls.size());
    if (c10::isIntegralType(dtype, /*includeBool=*/false))
      target.div_(n, "trunc");  // what NCCL's integer avg does
    else
      target.div_(n);
  }
}

std::string reduce_problem(const at::Tensor& t, ReduceOp op) {
  if (t.defined() && op == ReduceOp::Avg && t.scalar_type() == at::kBool) return "avg is not defined for bool";
  return "";
}

template <class F>
Computed guarded(F&& f) {
  try {
    f();
    return {};
  } catch (const c10::OutOfMemoryError& e) {
    return {e.what(), std::current_exception()};
  } catch (const std::exception& e) {
    return {e.what(), nullptr};
  }
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

}  // namespace

void ThreadCommunicator::all_gather_into_tensor(at::Tensor& output, const at::Tensor& input) {
  const uint64_t seq = next_sequence();
  const int n = size();
  Call call;
  call.op = "all_gather_into_tensor";
  call.signature = call.op + "(" + numel_and_dtype(input) + ")";
  call.invalid = first_problem({tensor_problem(input, "input"), tensor_problem(output, "output")});
  bool in_place = false;
  if (call.invalid.empty()) {
    if (output.scalar_type() != input.scalar_type())
      call.invalid = "output dtype " + dtype_name(output.scalar_type()) + " differs from input dtype " +
                     dtype_name(input.scalar_type());
    else if (output.numel() != input.numel() * n)
      call.invalid = "output has numel " + std::to_string(output.numel()) + ", expected " +
                     std::to_string(input.numel() * n) + " (input numel " + std::to_string(input.numel()) +
                     " x group size " + std::to_string(n) + ")";
    else if (overlaps(input, output)) {
      // FSDP copies its shard into the output at this rank's offset and gathers in place.
      in_place = byte_begin(input) == byte_begin(output) + rank_ * input.numel() * input.element_size();
      if (!in_place) call.invalid = "input overlaps output other than exactly at this rank's chunk";
    }
  }
  call.input = call.invalid.empty() ? input.data_ptr() : nullptr;
  Round& round = group_->arrive(rank_, seq, std::move(call));
  const Computed computed = guarded([&] {
    const int64_t chunk = input.numel();
    if (chunk == 0) return;
    at::Tensor out = alias(output);
    for (int r = 0; r < n; ++r) {
      if (r == rank_ && in_place) continue;
      out.narrow(0, r * chunk, chunk).copy_(alias(round.calls[r].input, 0, chunk, input.scalar_type()));
    }
  });
  complete(seq, round, computed);
}

void ThreadCommunicator::reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input, ReduceOp op) {
  const uint64_t seq = next_sequence();
  const int n = size();
  Call call;
  call.op = "reduce_scatter_tensor";
  call.signature = call.op + "(" + numel_and_dtype(input) + ", " + to_string(op) + ")";
  call.invalid =
      first_problem({tensor_problem(input, "input"), tensor_problem(output, "output"), reduce_problem(input, op)});
  bool in_place = false;
  if (call.invalid.empty()) {
    if (output.scalar_type() != input.scalar_type())
      call.invalid = "output dtype " + dtype_name(output.scalar_type()) + " differs from input dtype " +
                     dtype_name(input.scalar_type());
    else if (input.numel() != output.numel() * n)
      call.invalid = "input has numel " + std::to_string(input.numel()) + ", expected " +
                     std::to_string(output.numel() * n) + " (output numel " + std::to_string(output.numel()) +
                     " x group size " + std::to_string(n) + ")";
    else if (overlaps(input, output)) {
      in_place = byte_begin(output) == byte_begin(input) + rank_ * output.numel() * output.element_size();
      if (!in_place) call.invalid = "output overlaps input other than exactly at this rank's chunk";
    }
  }
  call.input = call.invalid.empty() ? input.data_ptr() : nullptr;
  Round& round = group_->arrive(rank_, seq, std::move(call));
  const Computed computed = guarded([&] {
    at::Tensor out = alias(output);
    // In place, our own chunk is still an input while we accumulate, so sum into scratch first.
    at::Tensor target = in_place ? at::empty({output.numel()}, output.options().requires_grad(false)) : out;
    reduce_into(target, round.calls, rank_ * output.numel(), output.scalar_type(), op);
    if (in_place) out.copy_(target);
  });
  complete(seq, round, computed);
}

void ThreadCommunicator::all_reduce(at::Tensor& tensor, ReduceOp op) {
  const uint64_t seq = next_sequence();
  Call call;
  call.op = "all_reduce";
  call.signature = call.op + "(" + shape_and_dtype(tensor) + ", " + to_string(op) + ")";
  call.invalid = first_problem({tensor_problem(tensor, "tensor"), reduce_problem(tensor, op)});
  call.input = call.invalid.empty() ? tensor.data_ptr() : nullptr;
  Round& round = group_->arrive(rank_, seq, std::move(call));
  at::Tensor result;
  const Computed computed = guarded([&] {
    result = at::empty({tensor.numel()}, tensor.options().requires_grad(false));
    reduce_into(result, round.calls, 0, tensor.scalar_type(), op);
  });
  complete(seq, round, computed);
  // Only now may we overwrite our tensor: finish() guarantees no peer is still reading it.
  if (tensor.numel() > 0) alias(tensor).copy_(result);
}

void ThreadCommunicator::all_to_all_single(at::Tensor& output, const at::Tensor& input,
                                           const std::vector<int64_t>& output_split_sizes,
                                           const std::vector<int64_t>& input_split_sizes) {
  const uint64_t seq = next_sequence();
  const int n = size();
  Call call;
  call.op = "all_to_all_single";
  call.invalid = first_problem({tensor_problem(input, "input"), tensor_problem(output, "output")});
  if (call.invalid.empty() && (input.dim() == 0 || output.dim() == 0))
    call.invalid = "input and output need a dim 0 to split along";
  call.signature =
      call.op + "(" +
      (call.invalid.empty() ? "row_shape=" + shape_str(input.sizes().slice(1)) + ", " + dtype_name(input.scalar_type())
                            : std::string("invalid")) +
      ")";
  if (call.invalid.empty()) {
    if (output.scalar_type() != input.scalar_type())
      call.invalid = "output dtype " + dtype_name(output.scalar_type()) + " differs from input dtype " +
                     dtype_name(input.scalar_type());
    else if (output.sizes().slice(1) != input.sizes().slice(1))
      call.invalid = "output rows have shape " + shape_str(output.sizes().slice(1)) + " but input rows have shape " +
                     shape_str(input.sizes().slice(1));
    else if (overlaps(input, output))
      call.invalid = "input and output overlap";
    else
      call.invalid =
          first_problem({resolve_splits(input_split_sizes, input, n, "input_split_sizes", call.send_rows),
                         resolve_splits(output_split_sizes, output, n, "output_split_sizes", call.recv_rows)});
  }
  call.input = call.invalid.empty() ? input.data_ptr() : nullptr;
  const std::vector<int64_t> recv_rows = call.recv_rows;
  Round& round = group_->arrive(rank_, seq, std::move(call));
  const Computed computed = guarded([&] {
    const int64_t row = c10::multiply_integers(input.sizes().slice(1));
    at::Tensor out = alias(output);
    int64_t out_row = 0;
    for (int r = 0; r < n; ++r) {
      const auto& peer = round.calls[r].send_rows;
      const int64_t in_row = std::accumulate(peer.begin(), peer.begin() + rank_, int64_t{0});
      const int64_t count = recv_rows[r] * row;
      if (count > 0)
        out.narrow(0, out_row * row, count)
            .copy_(alias(round.calls[r].input, in_row * row, count, input.scalar_type()));
      out_row += recv_rows[r];
    }
  });
  complete(seq, round, computed);
}

void ThreadCommunicator::broadcast(at::Tensor& tensor, int root) {
  const uint64_t seq = next_sequence();
  const int n = size();
  Call call;
  call.op = "broadcast";
  call.signature = call.op + "(" + shape_and_dtype(tensor) + ", root=" + std::to_string(root) + ")";
  call.invalid = tensor_problem(tensor, "tensor");
  if (call.invalid.empty() && (root < 0 || root >= n))
    call.invalid = "root " + std::to_string(root) + " is outside the group's ranks 0.." + std::to_string(n - 1);
  call.input = call.invalid.empty() ? tensor.data_ptr() : nullptr;
  Round& round = group_->arrive(rank_, seq, std::move(call));
  const Computed computed = guarded([&] {
    if (rank_ != root && tensor.numel() > 0)
      alias(tensor).copy_(alias(round.calls[root].input, 0, tensor.numel(), tensor.scalar_type()));
  });
  complete(seq, round, computed);
}

void ThreadCommunicator::barrier() {
  const uint64_t seq = next_sequence();
  Call call;
  call.op = "barrier";
  call.signature = "barrier()";
  Round& round = group_->arrive(rank_, seq, std::move(call));
  complete(seq, round, {});
}

void ThreadCommunicator::complete(uint64_t seq, Round& round, const Computed& computed) {
  try {
    group_->finish(rank_, seq, round, computed.error, computed.allocation_failure != nullptr);
  } catch (...) {
    // This rank's own allocation failure is an OOM to it (its peers are aborted by it).
    if (computed.allocation_failure) std::rethrow_exception(computed.allocation_failure);
    throw;
  }
}

uint64_t ThreadCommunicator::next_sequence() {
  const int epoch = group_->world().epoch();
  if (epoch != epoch_) {
    epoch_ = epoch;
    sequence_ = 0;
  }
  return sequence_++;
}

void ThreadCommunicator::abort_world(const std::string& reason) {
  group_->world().abort_recoverable(global_rank(), reason);
}

int ThreadCommunicator::recover_world() { return group_->world().recover(global_rank()); }

std::shared_ptr<Communicator> ThreadCommunicator::split(int color, int key, const std::string& name) {
  const uint64_t seq = next_sequence();
  Call call;
  call.op = "split";
  call.signature = "split()";  // colors and keys differ by design; only the op must agree
  call.color = color;
  call.key = key;
  call.split_name = name;
  Round& round = group_->arrive(rank_, seq, std::move(call));
  const SplitResult result = round.split[rank_];
  complete(seq, round, {});
  if (!result.group) return nullptr;
  return std::make_shared<ThreadCommunicator>(result.group, result.rank);
}

}  // namespace shardfuzz::comm::detail
