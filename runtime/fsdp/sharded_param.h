// ShardedParam (upstream FSDPParam): one parameter's padded local shard, its unsharded storage
// (resized to zero bytes while sharded, so tensors autograd saved keep aliasing it), its sharded
// gradient, and the layouts the all-gather and reduce-scatter use. Under a MixedPrecisionPolicy the
// shard keeps the parameter's own dtype (orig_dtype) and the unsharded parameter, its gradient and
// the all-gather are in param_dtype.
#pragma once

#include "runtime/memory/ledger.h"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::fsdp {

class ShardedParam {
 public:
  // Takes the full tensor in `slot`, keeps this rank's zero-padded torch.chunk shard along
  // `shard_dim`, and puts the unsharded parameter (no storage yet, in `param_dtype` when given)
  // into the slot.
  ShardedParam(std::string fqn, at::Tensor& slot, int shard_dim, int shard_rank, int shard_size,
               std::shared_ptr<memory::Ledger> ledger, std::string group,
               std::optional<at::ScalarType> param_dtype = std::nullopt);

  const std::string& fqn() const { return fqn_; }
  bool requires_grad() const { return requires_grad_; }
  int shard_dim() const { return shard_dim_; }
  int shard_size() const { return shard_size_; }
  const std::vector<int64_t>& full_sizes() const { return full_sizes_; }
  int64_t numel() const { return numel_; }
  int64_t padded_sharded_numel() const { return padded_; }
  int64_t unsharded_padded_numel() const { return padded_ * shard_size_; }
  int64_t element_size() const;           // of the shard (orig_dtype)
  int64_t unsharded_element_size() const;  // of the unsharded parameter (param_dtype)
  at::ScalarType orig_dtype() const { return sharded_data_.scalar_type(); }
  at::ScalarType param_dtype() const { return all_gather_output_.scalar_type(); }

  const at::Tensor& sharded_data() const { return sharded_data_; }  // 1-D, padded
  at::Tensor local_shard() const;  // un-padded, in the parameter's own layout
  at::Tensor& sharded_grad() { return sharded_grad_; }  // 1-D, padded; undefined when none

  // Unsharded storage (the all-gather outputs the parameter views).
  void alloc_unsharded();
  void free_unsharded();
  bool unsharded_allocated() const;
  const at::Tensor& unsharded_param() const { return unsharded_param_; }
  // gathered: (shard_size, padded) — row r is rank r's padded shard.
  void copy_out(const at::Tensor& gathered);

  // int reshard_after_forward: the j-th of n equal contiguous slices of the padded unsharded
  // buffer (a clone), and the copy-out of n gathered slices (n, len).
  at::Tensor post_forward_slice(int j, int n) const;
  void copy_out_post_forward(const at::Tensor& gathered);

  // The unsharded gradient autograd accumulated (undefined when none), taken: the parameter no
  // longer holds it.
  at::Tensor take_unsharded_grad();
  // Writes `grad` (this parameter's unsharded gradient) into `rows`, its (shard_size, padded)
  // columns of the reduce-scatter input: rank r's chunk in row r, the padding zeroed, cast to the
  // input's dtype on the way (upstream's chunk_cat copy-in; no temporary of its own).
  void copy_in_reduce_scatter_rows(const at::Tensor& grad, at::Tensor rows) const;
  // Adds a reduced gradient (any dtype) into the sharded gradient, in orig_dtype.
  void accumulate_sharded_grad(const at::Tensor& padded_shard);
  void clear_sharded_grad();
  // Recovery: the gradient autograd accumulated into the unsharded parameter, dropped unreduced.
  void drop_unsharded_grad();

 private:
  std::vector<int64_t> local_sizes() const;  // one chunk along shard_dim (dim 0: padded rows)

  std::string fqn_;
  std::string group_;
  std::shared_ptr<memory::Ledger> ledger_;
  int shard_dim_;
  int shard_rank_;
  int shard_size_;
  bool requires_grad_;
  std::vector<int64_t> full_sizes_;
  int64_t numel_ = 0;
  int64_t padded_ = 0;  // numel of every rank's padded local shard
  at::Tensor sharded_data_;
  at::Tensor all_gather_output_;  // 1-D, shard_size * padded
  at::Tensor unsharded_param_;    // leaf viewing all_gather_output_
  at::Tensor sharded_grad_;
  memory::LedgerEntry sharded_entry_, unsharded_entry_, grad_entry_;
};

}  // namespace shardfuzz::fsdp
