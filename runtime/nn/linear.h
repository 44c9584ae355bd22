// Linear: y = x W^T + b, optionally with a LoRA adapter on a frozen base.
// LoRA here departs from the paper's init on purpose: B is drawn N(0, 0.02^2) instead of zeros, so
// that A's gradient (which goes through B) is nonzero from the first step and a gradient-parity
// check of both adapters means something. Dropout is 0.
#pragma once

#include "runtime/nn/init.h"
#include "runtime/nn/module.h"

namespace shardfuzz::nn {

class Linear final : public Module {
 public:
  Linear(int64_t in, int64_t out, Init& init, bool bias = true);
  // y = x W^T + b + (alpha / rank) (x A^T) B^T. Registers "lora_a" [rank, in] ~ N(0, 1/in) then
  // "lora_b" [out, rank] ~ N(0, 0.02^2) (both trainable) from `init`, in that order, and freezes
  // "weight" and "bias" (requires_grad false). Throws on a second call or a rank outside [1, min(in, out)].
  void enable_lora(int64_t rank, double alpha, Init& init);
  bool has_lora() const { return lora_rank_ > 0; }
  int64_t lora_rank() const { return lora_rank_; }
  double lora_alpha() const { return lora_alpha_; }

  at::Tensor forward(const at::Tensor& x) override;

 private:
  int64_t lora_rank_ = 0;
  double lora_alpha_ = 0.0;
};

}  // namespace shardfuzz::nn
