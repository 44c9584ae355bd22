// The lowest-priority backward that sweeps a failed backward's leftovers.
#include "runtime/autograd/failed_backward.h"

#include <ATen/ops/ones.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>

#include <memory>

namespace shardfuzz::autograd {
namespace {

struct SweepNode final : torch::autograd::Node {
  SweepNode() : Node(/*sequence_nr=*/0) {}
  torch::autograd::variable_list apply(torch::autograd::variable_list&&) override { return {}; }
  std::string name() const override { return "shardfuzz::SweepFailedBackward"; }
};

}  // namespace

void drop_failed_backward_tasks() {
  const at::Tensor seed = at::ones({});
  auto node = std::make_shared<SweepNode>();
  node->add_input_metadata(seed);
  torch::autograd::Engine::get_default_engine().execute({torch::autograd::Edge(node, 0)}, {seed},
                                                        /*keep_graph=*/false, /*create_graph=*/false,
                                                        /*accumulate_grad=*/true);
}

}  // namespace shardfuzz::autograd
