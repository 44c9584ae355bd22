// Embedding: token ids -> rows of a [vocab, dim] table; the model zoo's input layer.
#pragma once

#include "runtime/nn/init.h"
#include "runtime/nn/module.h"

namespace shardfuzz::nn {

class Embedding final : public Module {
 public:
  // "weight" [vocab, dim] ~ N(0, 1), as upstream's nn.Embedding.
  Embedding(int64_t vocab, int64_t dim, Init& init);
  // ids: int64, any shape (one sequence is [T]) -> ids.sizes() + [dim].
  at::Tensor forward(const at::Tensor& ids) override;
};

}  // namespace shardfuzz::nn
