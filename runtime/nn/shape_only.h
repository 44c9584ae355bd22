// Shape-only execution: the index kernels a model needs that LibTorch (1.13) has no meta kernel
// for, answered by shape on the meta device and by the real kernel elsewhere. A meta tensor has
// sizes, a dtype and counted bytes (memory::install_counting_meta_allocator) but no values, so
// these return freshly allocated results of the right shape, as the real kernels would.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace shardfuzz::nn::shape_only {

inline bool has_values(const at::Tensor& t) { return !t.is_meta(); }

// x.index_select(0, index): rows of x.
inline at::Tensor select_rows(const at::Tensor& x, const at::Tensor& index) {
  if (has_values(x)) return x.index_select(0, index);
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes[0] = index.numel();
  return at::empty(sizes, x.options());
}

// zeros(sizes).index_add_(0, index, src): src's rows summed into a fresh tensor.
inline at::Tensor rows_added_to_zeros(const std::vector<int64_t>& sizes, const at::Tensor& index, const at::Tensor& src) {
  at::Tensor out = at::zeros(sizes, src.options());
  return has_values(src) ? out.index_add_(0, index, src) : out;
}

// base.index_add(0, index, src), out of place.
inline at::Tensor rows_added(const at::Tensor& base, const at::Tensor& index, const at::Tensor& src) {
  return has_values(base) ? base.index_add(0, index, src) : at::empty_like(base);
}

// probs.gather(1, index).
inline at::Tensor gather_columns(const at::Tensor& probs, const at::Tensor& index) {
  return has_values(probs) ? probs.gather(1, index) : at::empty(index.sizes(), probs.options());
}

// zeros(sizes).scatter_add_(1, index, g).
inline at::Tensor columns_added_to_zeros(const std::vector<int64_t>& sizes, const at::Tensor& index, const at::Tensor& g) {
  at::Tensor out = at::zeros(sizes, g.options());
  return has_values(g) ? out.scatter_add_(1, index, g) : out;
}

}  // namespace shardfuzz::nn::shape_only
