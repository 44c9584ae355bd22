// Routed (token-choice top-k) MoE with expert parallelism, as torchtitan's MoE trains it:
// router -> softmax -> top-k -> permute token copies by expert -> [EP: counts exchange, dispatch
// all-to-all, regroup by local expert] -> grouped experts -> [EP: combine all-to-all] -> un-permute,
// weight by the top-k scores, sum over k. The dense Experts/MoE in moe.h stay as they are; this is
// the layer whose experts can be sharded over an EP group and whose per-rank work depends on data.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/nn/init.h"
#include "runtime/nn/linear.h"
#include "runtime/nn/module.h"
#include "runtime/nn/routing_assumption.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace shardfuzz::nn {

// The local experts of one EP rank: w1 [E_local, D, H], w2 [E_local, H, D]; forward over rows
// already grouped by local expert, y_e = relu(x_e W1[e]) W2[e], with grouped-mm semantics (every
// local expert is in the graph, even with no rows, so w1/w2 always get a gradient when grad is on).
class RoutedExperts final : public Module {
 public:
  // Draws the full [E, D, H] then [E, H, D] tensors from `init` (the same draws at every ep_size)
  // and keeps experts [ep_rank * E_local, (ep_rank + 1) * E_local), E_local = experts / ep_size.
  RoutedExperts(int64_t dim, int64_t experts, int64_t hidden, Init& init, int ep_size = 1, int ep_rank = 0);

  // Rows per local expert for the next forward (E_local entries). Kept after the forward, so a
  // checkpoint recompute of this module alone sees the same grouping (one forward per backward).
  void set_tokens_per_expert(std::vector<int64_t> counts);
  const std::vector<int64_t>& tokens_per_expert() const { return counts_; }

  // x: [M, D] grouped by local expert, M = sum of tokens_per_expert() -> [M, D].
  at::Tensor forward(const at::Tensor& x) override;

  int64_t num_experts() const { return experts_; }
  int64_t num_local_experts() const { return local_; }
  int64_t first_local_expert() const { return first_; }

  // Opt-in defect model of the HuggingFace-Mixtral loop (`if no tokens: continue`): when none of
  // this rank's local experts gets a row, w1/w2 are left out of the graph, so they get no gradient
  // on this rank while other ranks' do (params used differently across ranks, pytorch#158719).
  // The empty output still depends on x, so the EP all-to-alls around it stay SPMD-consistent.
  void set_skip_empty_experts(bool skip) { skip_empty_ = skip; }
  bool skip_empty_experts() const { return skip_empty_; }

 private:
  int64_t dim_, experts_, local_, first_;
  std::vector<int64_t> counts_;
  bool skip_empty_ = false;
};

class RoutedMoE final : public Module {
 public:
  // top_k in [1, experts]. ep: the expert-parallel group (nullptr or size 1: every expert local);
  // experts % ep->size() == 0, rank j of ep owns experts [j * E_local, (j + 1) * E_local).
  RoutedMoE(int64_t dim, int64_t experts, int64_t hidden, int64_t top_k, Init& init,
            std::shared_ptr<comm::Communicator> ep = nullptr);

  // x: [T, D] -> [T, D]; T may be 0. Calls the router and the experts through operator() exactly
  // once each, on every rank, whatever the routing.
  at::Tensor forward(const at::Tensor& x) override;

  Linear& router() { return *router_; }
  RoutedExperts& experts() { return *experts_; }
  int64_t top_k() const { return top_k_; }
  int ep_size() const { return ep_ ? ep_->size() : 1; }
  // On the meta device (a shape-only run) the per-expert counts come from this assumption, every
  // EP rank's alike; with values they come from the router, and it is not used.
  void set_routing_assumption(RoutingAssumption a) { assumption_ = a; }
  const RoutingAssumption& routing_assumption() const { return assumption_; }
  const std::shared_ptr<comm::Communicator>& ep() const { return ep_; }

 private:
  // `counts`: copies this rank routes to each global expert.
  at::Tensor run_experts(const at::Tensor& routed, const std::vector<int64_t>& counts);

  int64_t dim_, num_experts_, top_k_;
  RoutingAssumption assumption_;
  std::shared_ptr<comm::Communicator> ep_;
  std::shared_ptr<RoutedExperts> experts_;
  std::shared_ptr<Linear> router_;
};

}  // namespace shardfuzz::nn
