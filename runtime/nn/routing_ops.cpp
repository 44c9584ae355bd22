// Forward with autograd off, backward as explicit formulas; the all-to-all's backward is the same
// collective with the splits swapped, so forward and backward enter the group equally often.
#include "runtime/nn/routing_ops.h"

#include "runtime/autograd/lambda_node.h"
#include "runtime/autograd/libtorch_formulas.h"
#include "runtime/autograd/op_support.h"
#include "runtime/autograd/saved_tensor.h"
#include "runtime/nn/shape_only.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>

namespace shardfuzz::nn::routing {
namespace {

using autograd::record_op;
using autograd::SavedTensor;
using autograd::tensor_list;

using autograd::no_grad;
using autograd::wants;

// As ops.cpp: an op saving its own output saves it without the grad_fn it is about to get.
using autograd::save_output;

std::string show(const std::vector<int64_t>& v) {
  std::ostringstream s;
  s << "[";
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  s << "]";
  return s.str();
}

std::string where(const comm::Communicator& c) {
  return "rank " + std::to_string(c.global_rank()) + " (group '" + c.name() + "' rank " + std::to_string(c.rank()) +
         " of " + std::to_string(c.size()) + ")";
}

void check_index(const char* op, const at::Tensor& index, int64_t rows) {
  if (!index.defined() || index.scalar_type() != at::kLong || index.dim() != 1)
    throw std::invalid_argument(std::string(op) + ": index must be a 1-D int64 tensor");
  if (index.numel() > 0 && shape_only::has_values(index)) {
    const int64_t lo = index.min().item<int64_t>(), hi = index.max().item<int64_t>();
    if (lo < 0 || hi >= rows)
      throw std::invalid_argument(std::string(op) + ": index values [" + std::to_string(lo) + ", " +
                                  std::to_string(hi) + "] outside [0, " + std::to_string(rows) + ")");
  }
}

std::vector<int64_t> with_rows(const at::Tensor& x, int64_t rows) {
  std::vector<int64_t> s = x.sizes().vec();
  s[0] = rows;
  return s;
}

}  // namespace

at::Tensor index_rows(const at::Tensor& x, const at::Tensor& index) {
  if (x.dim() < 1) throw std::invalid_argument("index_rows: x must have at least one dimension");
  check_index("index_rows", index, x.size(0));
  if (autograd::libtorch_formulas()) return x.index_select(0, index);
  at::Tensor out = no_grad([&] { return shape_only::select_rows(x, index); });
  SavedTensor si = wants(x) ? SavedTensor::save(index) : SavedTensor();
  return record_op("IndexRowsBackward", {x}, out, [si, xs = x.sizes().vec()](const at::Tensor& g) -> tensor_list {
    return {shape_only::rows_added_to_zeros(xs, si.unpack(), g)};
  });
}

at::Tensor index_add_rows(const at::Tensor& base, const at::Tensor& index, const at::Tensor& src) {
  if (base.dim() < 1 || src.dim() != base.dim() || src.size(0) != index.numel() ||
      src.sizes().slice(1) != base.sizes().slice(1))
    throw std::invalid_argument("index_add_rows: base " + show(base.sizes().vec()) + ", index of " +
                                std::to_string(index.numel()) + " and src " + show(src.sizes().vec()) +
                                " do not fit (src needs one row per index, rows shaped like base's)");
  check_index("index_add_rows", index, base.size(0));
  if (autograd::libtorch_formulas()) return base.index_add(0, index, src);
  at::Tensor out = no_grad([&] { return shape_only::rows_added(base, index, src); });
  SavedTensor si = wants(src) ? SavedTensor::save(index) : SavedTensor();
  return record_op("IndexAddRowsBackward", {base, src}, out,
                   [si, gb = wants(base), gs = wants(src)](const at::Tensor& g) -> tensor_list {
                     return {gb ? g : at::Tensor(), gs ? shape_only::select_rows(g, si.unpack()) : at::Tensor()};
                   });
}

at::Tensor topk_weights(const at::Tensor& probs, const at::Tensor& index) {
  if (probs.dim() != 2 || index.dim() != 2 || index.size(0) != probs.size(0) || index.scalar_type() != at::kLong)
    throw std::invalid_argument("topk_weights: probs " + show(probs.sizes().vec()) + " and index " +
                                show(index.sizes().vec()) + " must be [T, E] and int64 [T, k]");
  if (autograd::libtorch_formulas()) return probs.gather(1, index);
  at::Tensor out = no_grad([&] { return shape_only::gather_columns(probs, index); });
  SavedTensor si = wants(probs) ? SavedTensor::save(index) : SavedTensor();
  return record_op("TopkWeightsBackward", {probs}, out, [si, ps = probs.sizes().vec()](const at::Tensor& g) -> tensor_list {
    return {shape_only::columns_added_to_zeros(ps, si.unpack(), g)};
  });
}

at::Tensor grouped_mm(const at::Tensor& x, const at::Tensor& w, const std::vector<int64_t>& counts) {
  if (x.dim() != 2 || w.dim() != 3 || x.size(1) != w.size(1) || static_cast<int64_t>(counts.size()) != w.size(0))
    throw std::invalid_argument("grouped_mm: x " + show(x.sizes().vec()) + ", w " + show(w.sizes().vec()) +
                                " and counts " + show(counts) + " must be [M, K], [G, K, N] and G counts");
  int64_t total = 0;
  for (int64_t c : counts) {
    if (c < 0) throw std::invalid_argument("grouped_mm: negative count in " + show(counts));
    total += c;
  }
  if (total != x.size(0))
    throw std::invalid_argument("grouped_mm: counts " + show(counts) + " sum to " + std::to_string(total) + " but x has " +
                                std::to_string(x.size(0)) + " rows");
  if (autograd::libtorch_formulas()) {
    std::vector<at::Tensor> groups;  // x_g @ w[g] for every group, the empty ones included
    int64_t start = 0;
    for (std::size_t g = 0; g < counts.size(); ++g) {
      groups.push_back(at::mm(x.narrow(0, start, counts[g]), w.select(0, static_cast<int64_t>(g))));
      start += counts[g];
    }
    return groups.empty() ? at::zeros({x.size(0), w.size(2)}, x.options()) : at::cat(groups);
  }
  at::Tensor out = no_grad([&] {
    at::Tensor y = at::empty({x.size(0), w.size(2)}, x.options());
    int64_t start = 0;
    for (std::size_t g = 0; g < counts.size(); ++g) {
      if (counts[g] > 0) {
        at::Tensor rows = y.narrow(0, start, counts[g]);
        at::mm_out(rows, x.narrow(0, start, counts[g]), w[static_cast<int64_t>(g)]);
      }
      start += counts[g];
    }
    return y;
  });
  SavedTensor sx = wants(w) ? SavedTensor::save(x) : SavedTensor();
  SavedTensor sw = wants(x) ? SavedTensor::save(w) : SavedTensor();
  return record_op("GroupedMmBackward", {x, w}, out,
                   [sx, sw, counts, gx = wants(x), gw = wants(w), xs = x.sizes().vec(),
                    ws = w.sizes().vec()](const at::Tensor& g) -> tensor_list {
                     at::Tensor dx = gx ? at::zeros(xs, g.options()) : at::Tensor();
                     at::Tensor dw = gw ? at::zeros(ws, g.options()) : at::Tensor();
                     at::Tensor xx = gw ? sx.unpack() : at::Tensor();
                     at::Tensor ww = gx ? sw.unpack() : at::Tensor();
                     int64_t start = 0;
                     for (std::size_t e = 0; e < counts.size(); ++e) {
                       const int64_t n = counts[e], ei = static_cast<int64_t>(e);
                       if (n > 0) {
                         at::Tensor ge = g.narrow(0, start, n);
                         if (gx) dx.narrow(0, start, n).copy_(at::mm(ge, ww[ei].t()));
                         if (gw) dw[ei].copy_(at::mm(xx.narrow(0, start, n).t(), ge));
                       }
                       start += n;
                     }
                     return {dx, dw};
                   });
}

at::Tensor all_to_all(const at::Tensor& x, const std::shared_ptr<comm::Communicator>& comm,
                      const std::vector<int64_t>& output_splits, const std::vector<int64_t>& input_splits) {
  if (!comm) throw std::invalid_argument("all_to_all: no communicator");
  const auto n = static_cast<std::size_t>(comm->size());
  if (output_splits.size() != n || input_splits.size() != n)
    throw std::invalid_argument("all_to_all on " + where(*comm) + ": output_splits " + show(output_splits) +
                                " and input_splits " + show(input_splits) + " need " + std::to_string(n) +
                                " entries each");
  if (x.dim() < 1) throw std::invalid_argument("all_to_all on " + where(*comm) + ": x must have rows");
  int64_t in_rows = 0, out_rows = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (input_splits[i] < 0 || output_splits[i] < 0)
      throw std::invalid_argument("all_to_all on " + where(*comm) + ": negative split in " + show(output_splits) +
                                  " / " + show(input_splits));
    in_rows += input_splits[i];
    out_rows += output_splits[i];
  }
  if (in_rows != x.size(0))
    throw std::invalid_argument("all_to_all on " + where(*comm) + ": input_splits " + show(input_splits) + " sum to " +
                                std::to_string(in_rows) + " but x has " + std::to_string(x.size(0)) + " rows");
  at::Tensor out = no_grad([&] {
    at::Tensor y = at::empty(with_rows(x, out_rows), x.options());
    comm->all_to_all_single(y, x.contiguous(), output_splits, input_splits);
    return y;
  });
  return record_op("AllToAllBackward", {x}, out,
                   [comm, output_splits, input_splits, xs = x.sizes().vec(), ys = out.sizes().vec(),
                    opts = x.options()](const at::Tensor& g) -> tensor_list {
                     at::Tensor gy = g.defined() ? g.contiguous() : at::zeros(ys, opts);
                     at::Tensor gx = at::empty(xs, gy.options());
                     comm->all_to_all_single(gx, gy, input_splits, output_splits);
                     return {gx};
                   });
}

at::Tensor exchange_counts(const at::Tensor& counts, const std::shared_ptr<comm::Communicator>& comm) {
  if (!comm) throw std::invalid_argument("exchange_counts: no communicator");
  if (counts.dim() != 1 || counts.scalar_type() != at::kLong || counts.numel() % comm->size() != 0)
    throw std::invalid_argument("exchange_counts on " + where(*comm) + ": counts must be 1-D int64 with a multiple of " +
                                std::to_string(comm->size()) + " entries, got " + show(counts.sizes().vec()));
  at::Tensor out = at::empty_like(counts);
  comm->all_to_all_single(out, counts.contiguous(), {}, {});
  return out;
}

}  // namespace shardfuzz::nn::routing
