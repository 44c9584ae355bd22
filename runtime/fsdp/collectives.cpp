// Flat all-gather and reduce-scatter over a group's parameters.
#include "runtime/fsdp/collectives.h"

#include "runtime/autograd/outside_autograd.h"

#include <ATen/ATen.h>

namespace shardfuzz::fsdp {

std::unique_ptr<AllGatherResult> all_gather_flat(const std::vector<at::Tensor>& inputs, at::ScalarType dtype,
                                                 comm::Communicator* comm, const at::Tensor& persistent,
                                                 const std::shared_ptr<memory::Ledger>& ledger,
                                                 const std::string& group) {
  const autograd::OutsideAutograd outside;
  auto result = std::make_unique<AllGatherResult>();
  int64_t row = 0;
  for (const auto& t : inputs) {
    result->split_sizes.push_back(t.numel());
    row += t.numel();
  }
  const int size = comm ? comm->size() : 1;
  const int rank = comm ? comm->rank() : 0;
  const at::TensorOptions opts = (inputs.empty() ? at::TensorOptions() : inputs[0].options()).dtype(dtype);
  // One buffer lives across the collective, as upstream lays it out: the flat output, whose row
  // `rank` is this rank's copy-in (the pieces side by side, cast to `dtype` as they are copied).
  // At world size 1 there is no collective, and the output may be the persistent buffer.
  if (size == 1 && persistent.defined()) {
    result->output = persistent.view({1, row});
  } else {
    result->output = at::empty({size, row}, opts);
    result->entry = ledger->add(group, memory::BufferKind::PendingAllGather, size * row * result->output.element_size());
  }
  at::Tensor copy_in = result->output[rank];
  int64_t off = 0;
  for (const auto& t : inputs) {
    copy_in.narrow(0, off, t.numel()).copy_(t.reshape({-1}));
    off += t.numel();
  }
  if (size > 1) comm->all_gather_into_tensor(result->output, copy_in);
  return result;
}

at::Tensor gathered_piece(const AllGatherResult& result, std::size_t i) {
  int64_t off = 0;
  for (std::size_t k = 0; k < i; ++k) off += result.split_sizes[k];
  return result.output.narrow(1, off, result.split_sizes[i]);
}

ReduceResult reduce_scatter_grads(std::vector<ShardedParam>& params, comm::Communicator* shard_comm,
                                  comm::Communicator* replicate_comm, const std::shared_ptr<memory::Ledger>& ledger,
                                  const std::string& group, std::optional<at::ScalarType> reduce_dtype,
                                  double divide_factor, bool check_finite) {
  const autograd::OutsideAutograd outside;
  std::vector<ShardedParam*> with_grad;
  std::vector<at::Tensor> grads;  // unsharded, taken from their parameters; dropped once copied in
  ReduceResult result;
  for (auto& p : params) {
    at::Tensor g = p.take_unsharded_grad();
    if (!g.defined()) continue;
    if (check_finite && result.nonfinite_before.empty() && !at::isfinite(g).all().item<bool>())
      result.nonfinite_before = p.fqn();
    with_grad.push_back(&p);
    grads.push_back(std::move(g));
  }
  if (with_grad.empty()) return result;
  // One (shard_size, sum of padded) input, each parameter's rows written straight into its
  // columns in the reduce dtype (unset: the gradients' promoted dtype, as a concatenation's).
  at::ScalarType dtype = grads[0].scalar_type();
  for (const at::Tensor& g : grads) dtype = c10::promoteTypes(dtype, g.scalar_type());
  if (reduce_dtype) dtype = *reduce_dtype;
  int64_t row = 0;
  for (ShardedParam* p : with_grad) row += p->padded_sharded_numel();
  auto state = std::make_unique<ReduceScatterState>();
  state->input = at::empty({with_grad.front()->shard_size(), row}, grads[0].options().dtype(dtype));
  int64_t col = 0;
  for (std::size_t i = 0; i < with_grad.size(); ++i) {
    const int64_t padded = with_grad[i]->padded_sharded_numel();
    with_grad[i]->copy_in_reduce_scatter_rows(grads[i], state->input.narrow(1, col, padded));
    grads[i] = at::Tensor();
    col += padded;
  }
  state->entry = ledger->add(group, memory::BufferKind::ReduceScatterInput,
                             state->input.numel() * state->input.element_size());
  const int size = shard_comm ? shard_comm->size() : 1;
  at::Tensor output = at::empty({state->input.size(1)}, state->input.options());
  // AVG over the reduce group, or SUM and one division by the factor (upstream
  // set_gradient_divide_factor; torchtitan's expert-parallel experts divide by the whole world).
  const comm::ReduceOp op = divide_factor > 0 ? comm::ReduceOp::Sum : comm::ReduceOp::Avg;
  if (size == 1)
    output.copy_(state->input[0]);
  else
    shard_comm->reduce_scatter_tensor(output, state->input.view({-1}), op);
  if (replicate_comm && replicate_comm->size() > 1) replicate_comm->all_reduce(output, op);
  if (divide_factor > 0) output.div_(divide_factor);
  int64_t off = 0;
  for (ShardedParam* p : with_grad) {
    const at::Tensor reduced = output.narrow(0, off, p->padded_sharded_numel());
    if (check_finite && result.nonfinite_after.empty() && !at::isfinite(reduced).all().item<bool>())
      result.nonfinite_after = p->fqn();
    p->accumulate_sharded_grad(reduced);
    off += p->padded_sharded_numel();
  }
  // The sharded gradients alias the reduce output only when the dtypes agree; otherwise they are
  // a cast copy and the output is a buffer of its own, which HSDP's AllReduceState keeps alive.
  if (replicate_comm && output.scalar_type() != with_grad.front()->orig_dtype()) {
    result.all_reduce = std::make_unique<AllReduceState>();
    result.all_reduce->entry =
        ledger->add(group, memory::BufferKind::AllReduceInput, output.numel() * output.element_size());
    result.all_reduce->output = std::move(output);
  }
  result.reduce_scatter = std::move(state);
  return result;
}

}  // namespace shardfuzz::fsdp
