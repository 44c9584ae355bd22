// Model assembly.
#include "runtime/nn/model.h"

#include "runtime/nn/embedding.h"
#include "runtime/nn/ops.h"
#include "runtime/nn/rms_norm.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace shardfuzz::nn {

at::Tensor Sequential::forward(const at::Tensor& x) {
  at::Tensor h = x;
  for (auto& [name, child] : children()) h = (*child)(h);
  return h;
}

Model::Model(const ModelConfig& config) : Module("Model"), config_(config) {
  if (config.blocks < 0) throw std::invalid_argument("model.blocks: negative (" + std::to_string(config.blocks) + ")");
  if (config.dim < 1 || config.hidden < 1 || config.experts < 1)
    throw std::invalid_argument("model: dim, hidden and experts must be >= 1");
  Init init(config.seed, config.shape_only);
  if (config.vocab > 0) embed_ = register_module("embed", std::make_shared<Embedding>(config.vocab, config.dim, init));
  layers_ = register_module("layers", std::make_shared<Sequential>());
  std::vector<BlockConfig> kinds = config.layers;
  if (kinds.empty()) kinds.assign(static_cast<std::size_t>(config.blocks), BlockConfig{config.moe, config.gated});
  const BlockDims dims{config.dim, config.experts, config.hidden};
  for (std::size_t i = 0; i < kinds.size(); ++i)
    layers_->register_module(std::to_string(i), std::make_shared<Block>(dims, kinds[i], init, config.ep));
  if (config.final_norm) norm_ = register_module("norm", std::make_shared<RMSNorm>(config.dim, init));
  out_ = register_module("out", std::make_shared<Linear>(config.dim, config.dim, init));
}

at::Tensor Model::forward(const at::Tensor& x) {
  at::Tensor h = (*layers_)(embed_ ? (*embed_)(x) : x);
  return (*out_)(norm_ ? (*norm_)(h) : h);
}

at::Tensor sum_loss(const at::Tensor& output) { return ops::sum_all(output); }

at::Tensor mean_loss(const at::Tensor& output) {
  return ops::scale(ops::sum_all(output), 1.0 / static_cast<double>(std::max<int64_t>(1, output.numel())));
}

}  // namespace shardfuzz::nn
