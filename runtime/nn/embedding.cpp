// Embedding over ops::embedding.
#include "runtime/nn/embedding.h"

#include "runtime/nn/ops.h"

#include <stdexcept>
#include <string>

namespace shardfuzz::nn {

Embedding::Embedding(int64_t vocab, int64_t dim, Init& init) : Module("Embedding") {
  if (vocab <= 0 || dim <= 0)
    throw std::invalid_argument("Embedding: vocab and dim must be positive, got vocab " + std::to_string(vocab) +
                                ", dim " + std::to_string(dim));
  register_parameter("weight", init.normal({vocab, dim}, 1.0), true);
}

at::Tensor Embedding::forward(const at::Tensor& ids) {
  try {
    return ops::embedding(param("weight"), ids);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("module '" + display_name() + "' (Embedding): " + e.what());
  }
}

}  // namespace shardfuzz::nn
