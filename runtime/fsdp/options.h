// fully_shard's options, as plain data.
#pragma once

#include <c10/core/ScalarType.h>

#include <optional>
#include <string>

namespace shardfuzz::fsdp {

// reshard_after_forward: True, False, an int N (keep a 1/N slice, re-gather over N ranks), or
// Auto (upstream's None: True, except False for the root).
struct ReshardAfterForward {
  enum class Kind { Auto, True, False, Int };
  Kind kind = Kind::Auto;
  int n = 0;

  static ReshardAfterForward automatic() { return {Kind::Auto, 0}; }
  static ReshardAfterForward yes() { return {Kind::True, 0}; }
  static ReshardAfterForward no() { return {Kind::False, 0}; }
  static ReshardAfterForward ranks(int n) { return {Kind::Int, n}; }
  std::string describe() const;
};

// MixedPrecisionPolicy: parameters are all-gathered and computed in param_dtype (the sharded ones
// stay in their own dtype), gradients are reduced in reduce_dtype and accumulated into the sharded
// gradient in the parameter's dtype. Unset means "the parameter's own dtype"; the forward inputs of
// every fully_shard-ed module are cast to param_dtype when cast_forward_inputs (upstream default).
struct MixedPrecisionPolicy {
  std::optional<c10::ScalarType> param_dtype;
  std::optional<c10::ScalarType> reduce_dtype;
  bool cast_forward_inputs = true;
};

struct FullyShardOptions {
  ReshardAfterForward reshard_after_forward;
  int shard_dim = 0;  // Shard(dim); dims > 0 must divide evenly by the shard group size
  bool reshard_after_backward = true;
  // 0: gradients are averaged over the group's ranks. > 0: summed, then divided by this (upstream
  // set_gradient_divide_factor), e.g. the world size for expert-parallel experts, whose gradient
  // already sums the tokens of every rank of their EP group.
  double gradient_divide_factor = 0;
  MixedPrecisionPolicy mp_policy;
};

}  // namespace shardfuzz::fsdp
