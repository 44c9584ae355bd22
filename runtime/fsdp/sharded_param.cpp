// Sharding math (torch.chunk semantics: ceil-sized chunks, trailing ones short or empty, every
// rank padded to chunk 0's size) and the storage-resize lifecycle of the unsharded parameter.
#include "runtime/fsdp/sharded_param.h"

#include "runtime/autograd/outside_autograd.h"
#include "runtime/compat/torch_compat.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <stdexcept>

namespace shardfuzz::fsdp {

ShardedParam::ShardedParam(std::string fqn, at::Tensor& slot, int shard_dim, int shard_rank, int shard_size,
                           std::shared_ptr<memory::Ledger> ledger, std::string group,
                           std::optional<at::ScalarType> param_dtype)
    : fqn_(std::move(fqn)),
      group_(std::move(group)),
      ledger_(std::move(ledger)),
      shard_dim_(shard_dim),
      shard_rank_(shard_rank),
      shard_size_(shard_size),
      requires_grad_(slot.requires_grad()) {
  torch::autograd::AutoGradMode no_grad(false);
  at::Tensor full = slot.detach().contiguous();
  full_sizes_ = full.sizes().vec();
  numel_ = full.numel();
  if (shard_dim < 0 || shard_dim >= full.dim())
    throw std::invalid_argument("fully_shard: parameter '" + fqn_ + "': shard_dim " + std::to_string(shard_dim) +
                                " out of range for " + std::to_string(full.dim()) + "-d tensor");
  if (shard_dim > 0 && full.size(shard_dim) % shard_size != 0)
    throw std::invalid_argument("fully_shard: parameter '" + fqn_ + "': Shard(" + std::to_string(shard_dim) +
                                ") needs size " + std::to_string(full.size(shard_dim)) +
                                " to divide by the shard group size " + std::to_string(shard_size));
  int64_t local_numel = 1;
  for (int64_t s : local_sizes()) local_numel *= s;
  padded_ = local_numel;

  // This rank's chunk, zero-padded to chunk 0's size.
  sharded_data_ = at::zeros({padded_}, full.options());
  const int64_t chunk = local_sizes()[static_cast<std::size_t>(shard_dim)];
  const int64_t begin = std::min<int64_t>(chunk * shard_rank, full.size(shard_dim));
  const int64_t len = std::min<int64_t>(chunk, full.size(shard_dim) - begin);
  if (len > 0) {
    at::Tensor mine = full.narrow(shard_dim, begin, len).contiguous().reshape({-1});
    sharded_data_.narrow(0, 0, mine.numel()).copy_(mine);
  }
  sharded_entry_ = ledger_->add(group_, memory::BufferKind::ShardedParam, padded_ * element_size());

  // The view must exist before the storage shrinks (views check bounds when made).
  all_gather_output_ = at::empty({padded_ * shard_size_}, full.options().dtype(param_dtype.value_or(full.scalar_type())));
  unsharded_param_ = all_gather_output_.narrow(0, 0, numel_).view(full_sizes_).detach();
  unsharded_param_.set_requires_grad(requires_grad_);
  compat::resize_storage_bytes(all_gather_output_, 0);
  slot = unsharded_param_;  // the full tensor dies with its last reference
}

int64_t ShardedParam::element_size() const { return static_cast<int64_t>(sharded_data_.element_size()); }
int64_t ShardedParam::unsharded_element_size() const { return static_cast<int64_t>(all_gather_output_.element_size()); }

std::vector<int64_t> ShardedParam::local_sizes() const {
  std::vector<int64_t> s = full_sizes_;
  auto& d = s[static_cast<std::size_t>(shard_dim_)];
  d = (d + shard_size_ - 1) / shard_size_;
  return s;
}

at::Tensor ShardedParam::local_shard() const {
  const int64_t chunk = local_sizes()[static_cast<std::size_t>(shard_dim_)];
  const int64_t begin = std::min<int64_t>(chunk * shard_rank_, full_sizes_[static_cast<std::size_t>(shard_dim_)]);
  const int64_t len = std::min<int64_t>(chunk, full_sizes_[static_cast<std::size_t>(shard_dim_)] - begin);
  std::vector<int64_t> sizes = local_sizes();
  sizes[static_cast<std::size_t>(shard_dim_)] = len;
  int64_t n = 1;
  for (int64_t v : sizes) n *= v;
  return sharded_data_.narrow(0, 0, n).view(sizes);
}

bool ShardedParam::unsharded_allocated() const {
  return all_gather_output_.storage().nbytes() > 0 || all_gather_output_.numel() == 0;
}

void ShardedParam::alloc_unsharded() {
  if (all_gather_output_.storage().nbytes() > 0) return;
  const auto bytes = static_cast<std::size_t>(unsharded_padded_numel() * unsharded_element_size());
  compat::resize_storage_bytes(all_gather_output_, bytes);
  unsharded_entry_ = ledger_->add(group_, memory::BufferKind::UnshardedParam, static_cast<int64_t>(bytes));
}

void ShardedParam::free_unsharded() {
  compat::resize_storage_bytes(all_gather_output_, 0);
  unsharded_entry_.reset();
}

void ShardedParam::copy_out(const at::Tensor& gathered) {
  const autograd::OutsideAutograd outside;
  alloc_unsharded();
  if (shard_dim_ == 0) {
    all_gather_output_.view({shard_size_, padded_}).copy_(gathered);
    return;
  }
  // Shard(d>0): rank chunks are contiguous in dim-0 order, so re-assemble along d through a
  // full-size temporary (upstream does the same chunk + cat).
  std::vector<at::Tensor> chunks;
  chunks.reserve(static_cast<std::size_t>(shard_size_));
  for (int r = 0; r < shard_size_; ++r) chunks.push_back(gathered[r].view(local_sizes()));
  all_gather_output_.narrow(0, 0, numel_).view(full_sizes_).copy_(at::cat(chunks, shard_dim_));
}

at::Tensor ShardedParam::post_forward_slice(int j, int n) const {
  const int64_t len = unsharded_padded_numel() / n;
  return all_gather_output_.narrow(0, len * j, len).clone();
}

void ShardedParam::copy_out_post_forward(const at::Tensor& gathered) {
  const autograd::OutsideAutograd outside;
  alloc_unsharded();
  all_gather_output_.view(gathered.sizes()).copy_(gathered);
}

at::Tensor ShardedParam::take_unsharded_grad() {
  at::Tensor grad = unsharded_param_.grad();
  if (grad.defined()) unsharded_param_.mutable_grad() = at::Tensor();
  return grad;
}

void ShardedParam::copy_in_reduce_scatter_rows(const at::Tensor& grad, at::Tensor rows) const {
  const autograd::OutsideAutograd outside;
  if (padded_ == 0) return;
  if (shard_dim_ > 0) {
    // Shard(d>0): each rank's chunk along d is strided in the gradient; torch.chunk's chunks
    // divide evenly here (the constructor checks), so no row is padded.
    const std::vector<at::Tensor> chunks = grad.chunk(shard_size_, shard_dim_);
    for (int r = 0; r < shard_size_; ++r) rows[r].view(local_sizes()).copy_(chunks[static_cast<std::size_t>(r)]);
    return;
  }
  // Shard(0): the flat gradient fills whole rows, then part of one; the rest is padding.
  const at::Tensor flat = grad.reshape({-1});
  const int64_t full_rows = numel_ / padded_;
  const int64_t rest = numel_ % padded_;
  if (full_rows > 0)
    rows.narrow(0, 0, full_rows).copy_(flat.narrow(0, 0, full_rows * padded_).view({full_rows, padded_}));
  if (full_rows == shard_size_) return;
  at::Tensor partial = rows[full_rows];
  if (rest > 0) partial.narrow(0, 0, rest).copy_(flat.narrow(0, full_rows * padded_, rest));
  partial.narrow(0, rest, padded_ - rest).zero_();
  if (full_rows + 1 < shard_size_) rows.narrow(0, full_rows + 1, shard_size_ - full_rows - 1).zero_();
}

void ShardedParam::accumulate_sharded_grad(const at::Tensor& padded_shard) {
  const autograd::OutsideAutograd outside;
  if (sharded_grad_.defined()) {
    sharded_grad_.add_(padded_shard.to(orig_dtype()));
    return;
  }
  sharded_grad_ = padded_shard.to(orig_dtype(), /*non_blocking=*/false, /*copy=*/true);
  grad_entry_ = ledger_->add(group_, memory::BufferKind::Grad, padded_ * element_size());
}

void ShardedParam::clear_sharded_grad() {
  sharded_grad_ = at::Tensor();
  grad_entry_.reset();
}

void ShardedParam::drop_unsharded_grad() {
  if (unsharded_param_.defined() && unsharded_param_.grad().defined()) unsharded_param_.mutable_grad() = at::Tensor();
}

}  // namespace shardfuzz::fsdp
