// Differentiable primitives of routed (token-choice) MoE: row gathers and scatters for the
// dispatch permutation, the top-k score gather, the grouped expert matmul and the expert-parallel
// all-to-all. Same convention as ops.h (one LambdaNode per op, forward under no-grad, what the
// backward needs saved through autograd::SavedTensor); kept apart from ops.h because they are
// routing's own vocabulary and the all-to-all talks to a Communicator.
#pragma once

#include "runtime/comm/communicator.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace shardfuzz::nn::routing {

// The router's softmax and reshapes are nn::ops::softmax and nn::ops::reshape.

// Rows of x (dim 0) at `index` (int64, 1-D, values in [0, x.size(0))): out[i] = x[index[i]].
// Backward: index_add of the gradient rows into zeros shaped like x. Saves the index.
at::Tensor index_rows(const at::Tensor& x, const at::Tensor& index);

// base with src's rows added at `index`: out = base; out[index[i]] += src[i] (repeats accumulate).
// base may be a constant (e.g. zeros). Backward: base gets the gradient, src its rows at index.
at::Tensor index_add_rows(const at::Tensor& base, const at::Tensor& index, const at::Tensor& src);

// The top-k probabilities: probs [T, E], index [T, k] (int64, from a no-grad topk) -> [T, k],
// out[t][j] = probs[t][index[t][j]]. Differentiable in probs only; the choice of experts is not.
at::Tensor topk_weights(const at::Tensor& probs, const at::Tensor& index);

// Grouped matmul (torch._grouped_mm semantics for a 2-D x and a 3-D w): x [M, K] holds
// counts[0] rows of group 0, then counts[1] rows of group 1, ...; w [G, K, N];
// out rows of group g = x_g @ w[g] -> [M, N]. Every group takes part in the graph, including empty
// ones: when grad is on, dw is a full [G, K, N] tensor whose empty groups are zeros.
// Saves x (for dw) and w (for dx).
at::Tensor grouped_mm(const at::Tensor& x, const at::Tensor& w, const std::vector<int64_t>& counts);

// Rows of x [N, ...] exchanged over `comm` with all_to_all_single: input_splits[j] rows (in order)
// go to group rank j, output_splits[i] rows come from group rank i -> [sum(output_splits), ...].
// Both split vectors must have comm->size() entries; sum(input_splits) must be x.size(0).
// Backward: the all-to-all of the gradient with the splits swapped, over the same comm.
//
// SPMD discipline. The node is recorded exactly when record_op records any op: grad mode is on and
// x requires grad; the row counts play no part, so a rank sending or receiving zero rows (x or the
// output of shape [0, ...]) still records it and still enters the backward all-to-all. Callers
// must therefore keep "x requires grad" the same on every rank of the group (it is, whenever x's
// requires_grad follows from the model rather than from the data). An undefined output gradient is
// sent as zeros, so the backward collective always runs once the node is reached.
at::Tensor all_to_all(const at::Tensor& x, const std::shared_ptr<comm::Communicator>& comm,
                      const std::vector<int64_t>& output_splits, const std::vector<int64_t>& input_splits);

// Not differentiable: counts [n * c] int64 (c counts for each of the comm's n ranks) -> the
// [n * c] counts every rank sends to this one (rank i's c counts at [i*c, (i+1)*c)).
at::Tensor exchange_counts(const at::Tensor& counts, const std::shared_ptr<comm::Communicator>& comm);

}  // namespace shardfuzz::nn::routing
