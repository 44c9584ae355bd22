// One model per rank thread; meshes, wrapping, steps, teardown, all recorded.
#include "harness/thread_runner.h"

#include "harness/model_builder.h"
#include "runtime/comm/thread_world.h"
#include "runtime/fsdp/param_group.h"
#include "runtime/fsdp/rank_runtime.h"
#include "runtime/memory/counting_allocator.h"
#include "runtime/mesh/device_mesh.h"
#include "runtime/train/step.h"

#include <ATen/ATen.h>

#include <mutex>
#include <stdexcept>

namespace shardfuzz::harness {

std::vector<memory::TimelineEvent> RankRecord::events_of_step(int step, const std::string& category) const {
  std::vector<memory::TimelineEvent> out;
  for (const auto& e : timeline)
    if (e.step == step && e.category == category) out.push_back(e);
  return out;
}

std::string without_backtrace(const std::string& message) {
  return message.substr(0, message.find("\nException raised from"));
}

RunRecord run_on_threads(const ModelScenario& sc, int world_size, const fsdp::Profile& profile,
                         std::chrono::milliseconds deadline) {
  if (sc.expert_shard_size < 0 || (sc.expert_shard_size > 0 && world_size % sc.expert_shard_size != 0))
    throw std::invalid_argument("scenario.expert_shard_size: " + std::to_string(sc.expert_shard_size) +
                                " does not divide world size " + std::to_string(world_size));
  memory::install_counting_allocator();
  comm::ThreadWorld world({world_size, deadline});
  RunRecord run;
  run.ranks.resize(static_cast<std::size_t>(world_size));
  auto outcomes = world.run([&](std::shared_ptr<comm::Communicator> comm) {
    const int rank = comm->global_rank();
    memory::AllocationRankGuard tag(rank);
    RankRecord& rec = run.ranks[static_cast<std::size_t>(rank)];
    rec.rank = rank;
    rec.baseline_bytes = memory::allocated_bytes(rank).current;
    {
      fsdp::RankRuntime rt(rank, profile);
      {
        auto dense = mesh::DeviceMesh::world_mesh(comm, "dp");
        const int k = sc.expert_shard_size == 0 ? world_size : sc.expert_shard_size;
        mesh::DeviceMesh ep_mesh(comm, {world_size / k, k}, {"ep", "dp_mod_ep"});
        const mesh::DeviceMesh experts = sc.expert_shard_size == 0 ? dense : ep_mesh;

        auto model = build_model(sc);
        apply_fully_shard(*model, sc, dense, experts, rt);
        std::unique_ptr<train::ShardedOptimizer> opt;
        if (sc.optimizer) opt = std::make_unique<train::ShardedOptimizer>(rt.groups(), *sc.optimizer, rt);
        at::Tensor fixed = train::make_input(sc.seed, 0, 0, sc.tokens, sc.dim, !sc.frozen_block0);
        for (int s = 0; s < sc.steps; ++s) {
          at::Tensor x = sc.input_per_rank ? train::make_input(sc.seed, rank, s, sc.tokens, sc.dim, !sc.frozen_block0)
                                           : fixed;
          rec.losses.push_back(train::train_step(*model, x, nn::sum_loss, opt.get(), rt, s));
        }
        memory::AllocationRankGuard untagged(-1);  // the records are the harness's, not the rank's
        for (fsdp::ParamGroup* g : rt.groups())
          for (auto& p : g->params())
            rec.shards.push_back({p.fqn(), g->mesh().shard->rank(), g->mesh().shard->size(), p.shard_dim(),
                                  p.local_shard().clone()});
      }
      rt.set_step(sc.steps);
      rt.record("teardown", "", {}, "train");
      rec.timeline = rt.timeline().events();
    }
    rec.teardown_bytes = memory::allocated_bytes(rank).current;
  });
  for (const auto& o : outcomes)
    if (!o.ok) {
      run.error = "rank " + std::to_string(o.rank) + ": " + without_backtrace(o.error);
      break;
    }
  return run;
}

}  // namespace shardfuzz::harness
