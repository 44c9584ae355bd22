// ThreadWorld's collectives. Peers' buffers are wrapped with from_blob instead of viewed through
// their at::Tensor, so no rank ever touches another rank's TensorImpl or autograd metadata (the
// same contract as NCCL, which sees only device pointers). On the meta device (a shape-only run)
// the ranks meet, check and agree exactly as with data, and nothing moves.
#include "runtime/comm/thread_communicator.h"

#include "runtime/comm/collective_checks.h"

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
// A flat, autograd-free alias of `numel` elements at `data` (another rank's buffer or our own) on
// `device` (every rank of a ThreadWorld uses the same one).
at::Tensor alias(const void* data, int64_t offset, int64_t numel, at::ScalarType dtype, c10::Device device) {
  auto* base = static_cast<char*>(const_cast<void*>(data)) + offset * c10::elementSize(dtype);
  return at::from_blob(base, {numel}, at::TensorOptions().dtype(dtype).device(device));
}
at::Tensor alias(const at::Tensor& t) { return alias(t.data_ptr(), 0, t.numel(), t.scalar_type(), t.device()); }

// Sums chunk [offset, offset+numel) of every rank's input into `target`, in rank order 0..n-1 so
// that every rank (and every run) rounds identically.
void reduce_into(at::Tensor& target, const std::vector<Call>& calls, int64_t offset, at::ScalarType dtype,
                 ReduceOp op) {
  const int64_t numel = target.numel();
  if (numel == 0) return;
  target.copy_(alias(calls[0].input, offset, numel, dtype, target.device()));
  for (size_t r = 1; r < calls.size(); ++r) target.add_(alias(calls[r].input, offset, numel, dtype, target.device()));
  finish_reduction(target, op, static_cast<int64_t>(calls.size()));
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

}  // namespace

void ThreadCommunicator::all_gather_into_tensor(at::Tensor& output, const at::Tensor& input) {
  const uint64_t seq = next_sequence();
  const int n = size();
  Call call = all_gather_call(output, input, n);
  bool in_place = false;
  if (call.invalid.empty() && overlaps(input, output)) {
    // FSDP copies its shard into the output at this rank's offset and gathers in place.
    in_place = byte_begin(input) == byte_begin(output) + rank_ * input.numel() * input.element_size();
    if (!in_place) call.invalid = "input overlaps output other than exactly at this rank's chunk";
  }
  call.input = call.invalid.empty() ? peer_input(input) : nullptr;
  Round& round = group_->arrive(rank_, seq, std::move(call));
  const Computed computed = guarded([&] {
    const int64_t chunk = input.numel();
    if (chunk == 0 || output.is_meta()) return;
    at::Tensor out = alias(output);
    for (int r = 0; r < n; ++r) {
      if (r == rank_ && in_place) continue;
      out.narrow(0, r * chunk, chunk).copy_(alias(round.calls[r].input, 0, chunk, input.scalar_type(), input.device()));
    }
  });
  complete(seq, round, computed);
}

void ThreadCommunicator::reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input, ReduceOp op) {
  const uint64_t seq = next_sequence();
  const int n = size();
  Call call = reduce_scatter_call(output, input, op, n);
  bool in_place = false;
  if (call.invalid.empty() && overlaps(input, output)) {
    in_place = byte_begin(output) == byte_begin(input) + rank_ * output.numel() * output.element_size();
    if (!in_place) call.invalid = "output overlaps input other than exactly at this rank's chunk";
  }
  call.input = call.invalid.empty() ? peer_input(input) : nullptr;
  Round& round = group_->arrive(rank_, seq, std::move(call));
  const Computed computed = guarded([&] {
    if (output.is_meta()) return;
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
  Call call = all_reduce_call(tensor, op);
  call.input = call.invalid.empty() ? peer_input(tensor) : nullptr;
  Round& round = group_->arrive(rank_, seq, std::move(call));
  at::Tensor result;
  const Computed computed = guarded([&] {
    if (tensor.is_meta()) return;
    result = at::empty({tensor.numel()}, tensor.options().requires_grad(false));
    reduce_into(result, round.calls, 0, tensor.scalar_type(), op);
  });
  complete(seq, round, computed);
  // Only now may we overwrite our tensor: finish() guarantees no peer is still reading it.
  if (tensor.numel() > 0 && !tensor.is_meta()) alias(tensor).copy_(result);
}

void ThreadCommunicator::all_to_all_single(at::Tensor& output, const at::Tensor& input,
                                           const std::vector<int64_t>& output_split_sizes,
                                           const std::vector<int64_t>& input_split_sizes) {
  const uint64_t seq = next_sequence();
  const int n = size();
  Call call = all_to_all_call(output, input, output_split_sizes, input_split_sizes, n);
  if (call.invalid.empty() && overlaps(input, output)) call.invalid = "input and output overlap";
  call.input = call.invalid.empty() ? peer_input(input) : nullptr;
  const std::vector<int64_t> recv_rows = call.recv_rows;
  Round& round = group_->arrive(rank_, seq, std::move(call));
  const Computed computed = guarded([&] {
    if (output.is_meta()) return;
    const int64_t row = c10::multiply_integers(input.sizes().slice(1));
    at::Tensor out = alias(output);
    int64_t out_row = 0;
    for (int r = 0; r < n; ++r) {
      const auto& peer = round.calls[r].send_rows;
      const int64_t in_row = std::accumulate(peer.begin(), peer.begin() + rank_, int64_t{0});
      const int64_t count = recv_rows[r] * row;
      if (count > 0)
        out.narrow(0, out_row * row, count)
            .copy_(alias(round.calls[r].input, in_row * row, count, input.scalar_type(), input.device()));
      out_row += recv_rows[r];
    }
  });
  complete(seq, round, computed);
}

void ThreadCommunicator::broadcast(at::Tensor& tensor, int root) {
  const uint64_t seq = next_sequence();
  const int n = size();
  Call call = broadcast_call(tensor, root, n);
  call.input = call.invalid.empty() ? peer_input(tensor) : nullptr;
  Round& round = group_->arrive(rank_, seq, std::move(call));
  const Computed computed = guarded([&] {
    if (rank_ != root && tensor.numel() > 0 && !tensor.is_meta())
      alias(tensor).copy_(alias(round.calls[root].input, 0, tensor.numel(), tensor.scalar_type(), tensor.device()));
  });
  complete(seq, round, computed);
}

void ThreadCommunicator::barrier() {
  const uint64_t seq = next_sequence();
  Call call = barrier_call();
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

void ThreadCommunicator::pause(std::chrono::milliseconds duration) { group_->world().pause(global_rank(), duration); }

std::shared_ptr<Communicator> ThreadCommunicator::split(int color, int key, const std::string& name) {
  const uint64_t seq = next_sequence();
  // Colours and keys differ by design; only the op must agree.
  Round& round = group_->arrive(rank_, seq, split_call(color, key, name));
  const SplitResult result = round.split[rank_];
  complete(seq, round, {});
  if (!result.group) return nullptr;
  return std::make_shared<ThreadCommunicator>(result.group, result.rank);
}

}  // namespace shardfuzz::comm::detail
