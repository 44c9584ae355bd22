// Collects the managed parameters, shards them and wires the state (docs/fsdp2-semantics.md sections
// 1, 7 and 10).
#include "runtime/fsdp/fully_shard.h"

#include "runtime/fsdp/rank_runtime.h"

#include <stdexcept>

namespace shardfuzz::fsdp {
namespace {

// Parameters of `module`'s subtree not under a nested fully_shard (pre-order, with their full
// dotted paths from the root).
void collect_managed(nn::Module& module, bool is_top, std::vector<std::pair<std::string, at::Tensor*>>& out) {
  if (!is_top && fsdp_state_of(module)) return;
  for (auto& p : module.own_parameters())
    out.emplace_back(module.path().empty() ? p.name : module.path() + "." + p.name, &p.tensor);
  for (auto& [name, child] : module.children()) collect_managed(*child, false, out);
}

GroupMesh group_mesh(const mesh::DeviceMesh& mesh, const FullyShardOptions& options, const std::string& where) {
  GroupMesh gm;
  if (mesh.ndim() == 1) {
    gm.shard = mesh.dims()[0].group;
  } else if (mesh.ndim() == 2) {
    gm.replicate = mesh.dims()[0].group;
    gm.shard = mesh.dims()[1].group;
  } else {
    throw std::invalid_argument(where + ": mesh " + mesh.describe() + " has " + std::to_string(mesh.ndim()) +
                                " dims; FSDP takes 1 (shard) or 2 (replicate, shard)");
  }
  const auto& raf = options.reshard_after_forward;
  if (raf.kind == ReshardAfterForward::Kind::Int) {
    const int size = gm.shard->size();
    if (raf.n < 1 || size % raf.n != 0)
      throw std::invalid_argument(where + ": reshard_after_forward=" + std::to_string(raf.n) +
                                  " must divide the shard group size " + std::to_string(size));
    // N == size behaves as True and N == 1 as False; otherwise re-gather over N ranks, the flat
    // shard group reshaped to (-1, N).
    if (raf.n != size && raf.n != 1)
      gm.post_forward = gm.shard->split(gm.shard->rank() / raf.n, gm.shard->rank(),
                                        gm.shard->name() + "/post_forward" + std::to_string(raf.n));
  }
  return gm;
}

// FSDPParamGroup._init_mp_dtypes: the parameters that require grad share one dtype (their
// gradients are reduced together); frozen ones may differ (a LoRA base kept in bfloat16).
void check_uniform_trainable_dtype(const std::vector<std::pair<std::string, at::Tensor*>>& managed,
                                   const std::string& where) {
  const std::pair<std::string, at::Tensor*>* first = nullptr;
  for (const auto& p : managed) {
    if (!p.second->requires_grad()) continue;
    if (!first) {
      first = &p;
    } else if (p.second->scalar_type() != first->second->scalar_type()) {
      throw std::invalid_argument(where + ": FSDP expects one dtype among parameters that require grad, but '" +
                                  first->first + "' is " + c10::toString(first->second->scalar_type()) + " and '" +
                                  p.first + "' is " + c10::toString(p.second->scalar_type()));
    }
  }
}

}  // namespace

std::shared_ptr<FSDPState> fully_shard(nn::Module& module, const mesh::DeviceMesh& mesh, RankRuntime& runtime,
                                       FullyShardOptions options) {
  const std::string where = "fully_shard('" + module.display_name() + "', rank " + std::to_string(runtime.rank()) + ")";
  if (fsdp_state_of(module)) throw std::logic_error(where + ": module is already fully_shard-ed");
  if (module.hooks()) throw std::logic_error(where + ": module already has forward hooks");
  GroupMesh gm = group_mesh(mesh, options, where);
  // Upstream's _get_post_forward_mesh_info checks 1 before the group size, so at a shard group of
  // one rank an int 1 means False (found by differential conformance against torch 2.11).
  if (options.reshard_after_forward.kind == ReshardAfterForward::Kind::Int && options.reshard_after_forward.n == 1)
    options.reshard_after_forward = ReshardAfterForward::no();
  else if (options.reshard_after_forward.kind == ReshardAfterForward::Kind::Int &&
           options.reshard_after_forward.n == gm.shard->size())
    options.reshard_after_forward = ReshardAfterForward::yes();

  std::vector<std::pair<std::string, at::Tensor*>> managed;
  collect_managed(module, true, managed);
  check_uniform_trainable_dtype(managed, where);
  std::unique_ptr<ParamGroup> group;
  if (!managed.empty()) {
    std::vector<ShardedParam> params;
    params.reserve(managed.size());
    for (auto& [fqn, slot] : managed)
      params.emplace_back(fqn, *slot, options.shard_dim, gm.shard->rank(), gm.shard->size(), runtime.ledger_ptr(),
                          module.display_name(), options.mp_policy.param_dtype);
    group = std::make_unique<ParamGroup>(module.display_name(), std::move(params), std::move(gm), options, runtime);
  }
  auto state = std::make_shared<FSDPState>(module, std::move(group), runtime, options.mp_policy);
  module.set_hooks(state);
  return state;
}

}  // namespace shardfuzz::fsdp
