// A Node subclass whose apply() runs a closure; edges and input metadata wired as LibTorch's own
// custom functions do.
#include "runtime/autograd/lambda_node.h"

#include "runtime/autograd/outside_autograd.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <stdexcept>

namespace shardfuzz::autograd {
namespace {

class LambdaNode final : public torch::autograd::Node {
 public:
  LambdaNode(std::string name, BackwardFn fn) : name_(std::move(name)), fn_(std::move(fn)) {}

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    if (!fn_)
      throw std::runtime_error("autograd op '" + name_ +
                               "': backward called twice (its saved state was already released)");
    tensor_list out;
    {
      const OutsideAutograd outside;  // a backward formula is math, not a graph
      out = fn_(grads);
    }
    if (out.size() != num_outputs())
      throw std::logic_error("autograd op '" + name_ + "': backward returned " + std::to_string(out.size()) +
                             " gradients for " + std::to_string(num_outputs()) + " inputs");
    return out;
  }
  std::string name() const override { return name_; }
  void release_variables() override { fn_ = nullptr; }

 private:
  std::string name_;
  BackwardFn fn_;
};

}  // namespace

tensor_list record_op(const std::string& name, const tensor_list& inputs, tensor_list outputs,
                      BackwardFn backward) {
  bool needs_graph = torch::autograd::GradMode::is_enabled();
  if (needs_graph) {
    needs_graph = false;
    for (const auto& t : inputs) needs_graph = needs_graph || (t.defined() && t.requires_grad());
  }
  if (!needs_graph) return outputs;
  auto node = std::make_shared<LambdaNode>(name, std::move(backward));
  node->set_next_edges(torch::autograd::collect_next_edges(inputs));
  for (auto& out : outputs) {
    if (out.requires_grad() || out.grad_fn())
      throw std::logic_error("autograd op '" + name + "': outputs must be computed without autograd");
    torch::autograd::create_gradient_edge(out, node);
  }
  return outputs;
}

at::Tensor record_op(const std::string& name, const tensor_list& inputs, at::Tensor output,
                     std::function<tensor_list(const at::Tensor& grad_output)> backward) {
  auto outs = record_op(name, inputs, tensor_list{std::move(output)},
                        [fn = std::move(backward)](const tensor_list& grads) { return fn(grads[0]); });
  return outs[0];
}

at::Tensor reduce_to_shape(const at::Tensor& grad, at::IntArrayRef shape) {
  if (grad.sizes() == shape) return grad;
  at::Tensor g = grad;
  const int64_t lead = g.dim() - static_cast<int64_t>(shape.size());
  if (lead > 0) {
    std::vector<int64_t> dims(static_cast<std::size_t>(lead));
    for (int64_t i = 0; i < lead; ++i) dims[static_cast<std::size_t>(i)] = i;
    g = g.sum(dims);
  }
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    if (shape[static_cast<std::size_t>(i)] == 1 && g.size(i) != 1) keep.push_back(i);
  if (!keep.empty()) g = g.sum(keep, /*keepdim=*/true);
  return g;
}

}  // namespace shardfuzz::autograd
