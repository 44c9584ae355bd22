// Routing is computed without grad (top-k choice, permutations, counts); everything that carries
// values goes through ops/routing ops, so the graph (and what a checkpoint region saves) is that of
// upstream's MoE. Collective order per forward on every EP rank: counts all-to-all, dispatch
// all-to-all, [experts' hooks and forward], combine all-to-all; backward: combine's, then the
// experts', then dispatch's.
#include "runtime/nn/routed_moe.h"

#include "runtime/comm/rank_context.h"
#include "runtime/nn/ops.h"
#include "runtime/nn/routing_ops.h"
#include "runtime/nn/shape_only.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace shardfuzz::nn {
namespace {

std::string show(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string on_rank(const Module& m) {
  const int r = comm::current_thread_rank();
  return (r >= 0 ? "rank " + std::to_string(r) + ": " : std::string()) + "module '" + m.display_name() + "' (" +
         m.type() + ")";
}

std::vector<int64_t> to_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU, at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

at::Tensor to_index(const std::vector<int64_t>& v, c10::Device device) {
  return at::tensor(v, at::TensorOptions().dtype(at::kLong)).reshape({static_cast<int64_t>(v.size())}).to(device);
}

// Keeps [first, first + n) of a full per-expert tensor as its own storage.
at::Tensor local_slice(const at::Tensor& full, int64_t first, int64_t n) { return full.narrow(0, first, n).clone(); }

}  // namespace

RoutedExperts::RoutedExperts(int64_t dim, int64_t experts, int64_t hidden, Init& init, int ep_size, int ep_rank)
    : Module("RoutedExperts"), dim_(dim), experts_(experts) {
  if (dim < 1 || hidden < 1 || experts < 1)
    throw std::invalid_argument("RoutedExperts: dim " + std::to_string(dim) + ", experts " + std::to_string(experts) +
                                ", hidden " + std::to_string(hidden) + " must all be >= 1");
  if (ep_size < 1 || ep_rank < 0 || ep_rank >= ep_size || experts % ep_size != 0)
    throw std::invalid_argument("RoutedExperts: " + std::to_string(experts) + " experts cannot be split over EP size " +
                                std::to_string(ep_size) + " at EP rank " + std::to_string(ep_rank) +
                                " (experts % ep must be 0, 0 <= rank < ep)");
  local_ = experts / ep_size;
  first_ = static_cast<int64_t>(ep_rank) * local_;
  // The full draws, whatever the slice: every rank and the unsharded reference consume `init` alike.
  at::Tensor w1 = init.normal({experts, dim, hidden}, 1.0 / std::sqrt(static_cast<double>(dim)));
  at::Tensor w2 = init.normal({experts, hidden, dim}, 1.0 / std::sqrt(static_cast<double>(hidden)));
  register_parameter("w1", local_slice(w1, first_, local_), true);
  register_parameter("w2", local_slice(w2, first_, local_), true);
  counts_.assign(static_cast<std::size_t>(local_), 0);
}

void RoutedExperts::set_tokens_per_expert(std::vector<int64_t> counts) {
  if (static_cast<int64_t>(counts.size()) != local_)
    throw std::invalid_argument(on_rank(*this) + ": tokens_per_expert " + show(counts) + " has " +
                                std::to_string(counts.size()) + " entries for " + std::to_string(local_) +
                                " local experts");
  for (int64_t c : counts)
    if (c < 0) throw std::invalid_argument(on_rank(*this) + ": negative count in tokens_per_expert " + show(counts));
  counts_ = std::move(counts);
}

at::Tensor RoutedExperts::forward(const at::Tensor& x) {
  const int64_t total = std::accumulate(counts_.begin(), counts_.end(), int64_t{0});
  if (x.dim() != 2 || x.size(1) != dim_ || x.size(0) != total)
    throw std::invalid_argument(on_rank(*this) + ": input " + show(x.sizes().vec()) + " does not match [" +
                                std::to_string(total) + ", " + std::to_string(dim_) + "] (tokens_per_expert " +
                                show(counts_) + ")");
  // The modelled defect: nothing routed here, so the weights are skipped altogether; the empty
  // result is tied to x alone (its gradient, empty too, still flows back to the dispatch).
  if (skip_empty_ && total == 0) return ops::scale(x, 0.0);
  at::Tensor h = ops::relu(routing::grouped_mm(x, param("w1"), counts_));  // [M, H]
  return routing::grouped_mm(h, param("w2"), counts_);                    // [M, D]
}

RoutedMoE::RoutedMoE(int64_t dim, int64_t experts, int64_t hidden, int64_t top_k, Init& init,
                     std::shared_ptr<comm::Communicator> ep)
    : Module("MoE"), dim_(dim), num_experts_(experts), top_k_(top_k), ep_(std::move(ep)) {
  if (top_k < 1 || top_k > experts)
    throw std::invalid_argument("RoutedMoE: top_k " + std::to_string(top_k) + " outside [1, " + std::to_string(experts) +
                                "]");
  const int ep_size = ep_ ? ep_->size() : 1;
  const int ep_rank = ep_ ? ep_->rank() : 0;
  if (experts % ep_size != 0)
    throw std::invalid_argument("RoutedMoE on rank " + std::to_string(ep_ ? ep_->global_rank() : 0) + ": " +
                                std::to_string(experts) + " experts do not divide over EP group '" +
                                (ep_ ? ep_->name() : std::string()) + "' of size " + std::to_string(ep_size));
  // Same registration order (and so the same init draws) as the dense MoE: experts, then router.
  experts_ = register_module("experts", std::make_shared<RoutedExperts>(dim, experts, hidden, init, ep_size, ep_rank));
  router_ = register_module("router", std::make_shared<Linear>(dim, experts, init, /*bias=*/false));
}

at::Tensor RoutedMoE::forward(const at::Tensor& x) {
  if (x.dim() != 2 || x.size(1) != dim_)
    throw std::invalid_argument(on_rank(*this) + ": input " + show(x.sizes().vec()) + " is not [T, " +
                                std::to_string(dim_) + "]");
  const int64_t T = x.size(0), k = top_k_, E = num_experts_;

  // Scores: softmax over all experts, then the top-k probabilities as they are (torchtitan's
  // default route_norm=False: no renormalisation over the k chosen).
  at::Tensor probs = ops::softmax((*router_)(x), 1);  // [T, E]
  at::Tensor chosen, order, token_of;
  std::vector<int64_t> counts;
  {
    torch::autograd::AutoGradMode off(false);
    chosen = std::get<1>(at::topk(probs.detach(), k, /*dim=*/1, /*largest=*/true, /*sorted=*/true));  // [T, k]
    at::Tensor flat = chosen.reshape({T * k});
    // Copy p of token t, slot j (flat position t*k + j) moves to the p-th place in expert order;
    // the stable sort keeps tokens in order within an expert, as upstream's permutation does.
    order = std::get<1>(at::sort(flat, /*stable=*/true, /*dim=*/0, /*descending=*/false));
    token_of = at::div(order, k, "floor");
    counts = shape_only::has_values(flat)
                 ? to_vector(at::zeros({E}, flat.options()).index_add_(0, flat, at::ones({T * k}, flat.options())))
                 : assumption_.counts(T * k, E);
  }
  at::Tensor weights = routing::index_rows(ops::reshape(routing::topk_weights(probs, chosen), {T * k}), order);
  at::Tensor routed = routing::index_rows(x, token_of);  // [T*k, D], grouped by global expert

  at::Tensor y = run_experts(routed, counts);  // [T*k, D], same order as routed

  // Weight each copy by its score and sum the k copies of every token back into its row.
  at::Tensor weighted = ops::mul(y, ops::unsqueeze(weights, 1));
  return routing::index_add_rows(at::zeros({T, dim_}, x.options()), token_of, weighted);
}

at::Tensor RoutedMoE::run_experts(const at::Tensor& routed, const std::vector<int64_t>& counts) {
  if (!ep_ || ep_->size() == 1) {
    experts_->set_tokens_per_expert(counts);
    return (*experts_)(routed);
  }
  const int n = ep_->size();
  const int64_t local = experts_->num_local_experts();
  // recv[i * local + e]: rows rank i sends to this rank's local expert e. Without values every
  // rank routes by the same assumption, so rank i sends what this rank would to the same expert;
  // the counts exchange still runs, by shape, so the collectives are those of a run with data.
  const std::vector<int64_t>& send = counts;
  const at::Tensor exchanged = routing::exchange_counts(to_index(send, routed.device()), ep_);
  std::vector<int64_t> recv(send.size());
  if (shape_only::has_values(exchanged))
    recv = to_vector(exchanged);
  else
    for (int i = 0; i < n; ++i)
      for (int64_t e = 0; e < local; ++e)
        recv[static_cast<std::size_t>(i * local + e)] = send[static_cast<std::size_t>(ep_->rank() * local + e)];
  std::vector<int64_t> send_splits(n, 0), recv_splits(n, 0), per_expert(static_cast<std::size_t>(local), 0);
  for (int i = 0; i < n; ++i)
    for (int64_t e = 0; e < local; ++e) {
      send_splits[i] += send[static_cast<std::size_t>(i * local + e)];
      recv_splits[i] += recv[static_cast<std::size_t>(i * local + e)];
      per_expert[static_cast<std::size_t>(e)] += recv[static_cast<std::size_t>(i * local + e)];
    }

  at::Tensor received = routing::all_to_all(routed, ep_, recv_splits, send_splits);  // by source, then expert

  // Regroup by local expert (source order kept within an expert); inverse undoes it afterwards.
  const int64_t rows = received.size(0);
  if (!shape_only::has_values(received)) {  // the two permutations by shape: no values to order
    const auto permutation = [&] { return at::empty({rows}, at::TensorOptions().dtype(at::kLong).device(received.device())); };
    experts_->set_tokens_per_expert(per_expert);
    at::Tensor out = (*experts_)(routing::index_rows(received, permutation()));
    return routing::all_to_all(routing::index_rows(out, permutation()), ep_, send_splits, recv_splits);
  }
  std::vector<int64_t> regroup, inverse(static_cast<std::size_t>(rows));
  regroup.reserve(static_cast<std::size_t>(rows));
  std::vector<int64_t> start(static_cast<std::size_t>(n * local));
  for (int64_t s = 0, idx = 0; idx < n * local; ++idx) {
    start[static_cast<std::size_t>(idx)] = s;
    s += recv[static_cast<std::size_t>(idx)];
  }
  for (int64_t e = 0; e < local; ++e)
    for (int i = 0; i < n; ++i) {
      const std::size_t seg = static_cast<std::size_t>(i * local + e);
      for (int64_t r = 0; r < recv[seg]; ++r) regroup.push_back(start[seg] + r);
    }
  for (std::size_t p = 0; p < regroup.size(); ++p) inverse[static_cast<std::size_t>(regroup[p])] = static_cast<int64_t>(p);

  at::Tensor grouped = routing::index_rows(received, to_index(regroup, received.device()));
  experts_->set_tokens_per_expert(per_expert);
  at::Tensor out = (*experts_)(grouped);  // the hooks fire here, between dispatch and combine
  at::Tensor by_source = routing::index_rows(out, to_index(inverse, out.device()));
  return routing::all_to_all(by_source, ep_, send_splits, recv_splits);
}

}  // namespace shardfuzz::nn
