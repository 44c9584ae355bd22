// Builds and runs a recorded trace's scenario, one model per rank thread.
#include "harness/conformance/trace_scenario.h"

#include "runtime/comm/thread_world.h"
#include "runtime/fsdp/fully_shard.h"
#include "runtime/fsdp/rank_runtime.h"
#include "runtime/memory/counting_allocator.h"
#include "runtime/mesh/device_mesh.h"
#include "runtime/nn/model.h"
#include "runtime/train/step.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <stdexcept>

namespace shardfuzz::harness {
namespace {

template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& kind) {
  const nlohmann::json& v = j.at(key);
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(std::string("scenario.") + key + ": expected " + kind + ", got " + v.dump());
  }
}

}  // namespace

TraceScenario TraceScenario::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("scenario: expected an object, got " + j.dump());
  static const std::set<std::string> known = {"name", "blocks", "ac", "gated", "lora", "nested", "wrap_out",
                                              "explicit", "frozen_block0", "block_reshard_after_forward", "steps"};
  for (const auto& [key, value] : j.items())
    if (!known.count(key)) throw std::invalid_argument("scenario." + key + ": unknown key");
  TraceScenario s;
  s.name = j.contains("name") ? field<std::string>(j, "name", "a string") : "";
  s.blocks = field<int>(j, "blocks", "an integer");
  if (s.blocks < 1 || s.blocks > 64) throw std::invalid_argument("scenario.blocks: " + std::to_string(s.blocks) + " outside [1, 64]");
  s.ac = ac::checkpoint_mode_from_string(field<std::string>(j, "ac", "a string"));
  if (j.contains("gated")) s.gated = field<bool>(j, "gated", "a boolean");
  if (j.contains("lora")) s.lora = field<bool>(j, "lora", "a boolean");
  if (s.lora) throw std::invalid_argument("scenario.lora: LoRA layers are not modelled by the native runtime yet");
  if (j.contains("nested")) {
    s.nested = field<std::vector<int>>(j, "nested", "a list of block indices");
    for (int b : *s.nested)
      if (b < 0 || b >= s.blocks) throw std::invalid_argument("scenario.nested: block " + std::to_string(b) + " out of range");
  }
  if (j.contains("wrap_out")) s.wrap_out = field<bool>(j, "wrap_out", "a boolean");
  if (j.contains("explicit")) {
    s.explicit_prefetch = field<std::string>(j, "explicit", "a string");
    if (s.explicit_prefetch != "torchtitan" && s.explicit_prefetch != "empty" && s.explicit_prefetch != "self_experts")
      throw std::invalid_argument("scenario.explicit: unknown value '" + s.explicit_prefetch +
                                  "' (torchtitan, empty, self_experts)");
  }
  if (j.contains("frozen_block0")) s.frozen_block0 = field<bool>(j, "frozen_block0", "a boolean");
  if (j.contains("block_reshard_after_forward"))
    s.block_reshard_after_forward = field<bool>(j, "block_reshard_after_forward", "a boolean");
  if (j.contains("steps")) s.steps = field<int>(j, "steps", "an integer");
  if (s.steps < 1 || s.steps > 100) throw std::invalid_argument("scenario.steps: " + std::to_string(s.steps) + " outside [1, 100]");
  return s;
}

bool TraceScenario::is_nested(int block) const {
  return !nested || std::find(nested->begin(), nested->end(), block) != nested->end();
}

TraceRun run_trace_scenario(const TraceScenario& sc, int world_size, const fsdp::Profile& profile) {
  memory::install_counting_allocator();
  comm::ThreadWorld world({world_size, std::chrono::milliseconds(30000)});
  TraceRun run;
  std::mutex mu;
  auto outcomes = world.run([&](std::shared_ptr<comm::Communicator> comm) {
    const int rank = comm->global_rank();
    memory::AllocationRankGuard tag(rank);
    fsdp::RankRuntime rt(rank, profile);
    {
      auto mesh = mesh::DeviceMesh::world_mesh(comm, "dp");
      nn::ModelConfig cfg;
      cfg.blocks = sc.blocks;
      cfg.gated = sc.gated;
      nn::Model model(cfg);
      if (sc.frozen_block0) model.block(0).set_requires_grad(false);
      fsdp::FullyShardOptions block_opts;
      block_opts.reshard_after_forward =
          sc.block_reshard_after_forward ? fsdp::ReshardAfterForward::yes() : fsdp::ReshardAfterForward::no();
      for (int i = 0; i < sc.blocks; ++i) {
        nn::Block& b = model.block(i);
        b.set_checkpoint_mode(sc.ac);
        if (sc.is_nested(i)) fsdp::fully_shard(b.moe()->experts(), mesh, rt, block_opts);
        fsdp::fully_shard(b, mesh, rt, block_opts);
      }
      if (sc.wrap_out) fsdp::fully_shard(model.out(), mesh, rt);
      fsdp::fully_shard(model, mesh, rt);
      auto state = [](nn::Module& m) { return fsdp::fsdp_state_of(m); };
      if (sc.explicit_prefetch == "torchtitan") {
        for (int i = 0; i < sc.blocks; ++i) {
          if (i + 1 < sc.blocks) {
            std::vector<nn::Module*> next{&model.block(i + 1)};
            if (sc.is_nested(i + 1)) next.push_back(&model.block(i + 1).moe()->experts());
            state(model.block(i))->set_modules_to_forward_prefetch(next);
          }
          if (i > 0) {
            std::vector<nn::Module*> prev{&model.block(i - 1)};
            if (sc.is_nested(i - 1)) prev.push_back(&model.block(i - 1).moe()->experts());
            state(model.block(i))->set_modules_to_backward_prefetch(prev);
          }
        }
      } else if (sc.explicit_prefetch == "empty") {
        for (int i = 0; i < sc.blocks; ++i) state(model.block(i))->set_modules_to_backward_prefetch({});
      } else if (sc.explicit_prefetch == "self_experts") {
        for (int i = 0; i < sc.blocks; ++i)
          if (sc.is_nested(i)) {
            nn::Module& e = model.block(i).moe()->experts();
            state(e)->set_modules_to_backward_prefetch({&e});
          }
      }
      // record.py draws one input from seed 0 and reuses it every step.
      at::Tensor x = train::make_input(0, 0, 0, 4, cfg.dim, !sc.frozen_block0);
      for (int s = 0; s < sc.steps; ++s) train::train_step(model, x, nn::sum_loss, nullptr, rt, s);
    }
    if (rank == 0) {
      std::lock_guard<std::mutex> lock(mu);
      for (int s = 0; s < sc.steps; ++s) run.steps.push_back(rt.timeline().events_of_step(s, "fsdp"));
    }
  });
  for (const auto& o : outcomes)
    if (!o.ok) {
      // LibTorch appends a C++ backtrace to its messages; the first lines say what happened.
      run.error = "rank " + std::to_string(o.rank) + ": " + o.error.substr(0, o.error.find("\nException raised from"));
      break;
    }
  return run;
}

}  // namespace shardfuzz::harness
