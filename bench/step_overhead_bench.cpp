// Runtime overhead: one training step at world 1 of the native runtime (fully_shard on every block,
// its experts and the head; the FSDP state machine, ledger and our autograd ops; timeline off)
// against plain LibTorch forward / backward / SGD of the same unsharded model with the same
// weights (ATen ops on LibTorch's own autograd, no hooks), for the standard small model (4 gated
// MoE blocks, dim 64) and a medium one (8 blocks, dim 512). Activation checkpointing is off on both
// sides: the plain twin has none, and recompute is not overhead. Both run one intra-op thread, as
// every ThreadWorld rank does.
#include "harness/model/model_builder.h"
#include "harness/scenario/standard_scenarios.h"
#include "runtime/comm/thread_world.h"
#include "runtime/fsdp/rank_runtime.h"
#include "runtime/memory/counting_allocator.h"
#include "runtime/memory/device_memory.h"
#include "runtime/memory/probe.h"
#include "runtime/mesh/device_mesh.h"
#include "runtime/train/optimizer.h"
#include "runtime/train/step.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include "bench/steady_rows.h"

#include <benchmark/benchmark.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <map>
#include <string>

namespace shardfuzz::bench {
namespace {

harness::Scenario model_of(bool medium) {
  harness::Scenario sc = harness::nested_experts_scenario(medium ? 8 : 4, true, 1, "torch-2.11", 1);
  sc.dims.dim = medium ? 512 : 64;
  sc.dims.hidden = medium ? 512 : 128;
  sc.dims.experts = 4;
  sc.dims.tokens = 32;
  for (auto& b : sc.blocks) b.ac = ac::CheckpointMode::None;
  return sc;
}

// The same model in ATen ops on LibTorch's autograd: block = x + attn(x); then + experts * gate.
class PlainTwin {
 public:
  PlainTwin(const harness::Scenario& sc, nn::Model& source) : blocks_(static_cast<int>(sc.blocks.size())) {
    for (auto& [name, tensor] : source.named_parameters()) {
      at::Tensor p = tensor->detach().clone();
      p.set_requires_grad(true);
      params_[name] = p;
    }
  }
  bool complete() const {
    for (int i = 0; i < blocks_; ++i)
      for (const char* n : {".attn.weight", ".moe.experts.w1", ".moe.experts.w2", ".moe.router.weight"})
        if (!params_.count("layers." + std::to_string(i) + n)) return false;
    return params_.count("out.weight") > 0;
  }
  void step(const at::Tensor& input, double lr) {
    at::Tensor h = input;
    for (int i = 0; i < blocks_; ++i) {
      const std::string l = "layers." + std::to_string(i);
      h = h + at::linear(h, p(l + ".attn.weight"), bias(l + ".attn.bias"));
      const at::Tensor w1 = p(l + ".moe.experts.w1");
      const at::Tensor y = at::matmul(at::relu(at::matmul(h.unsqueeze(0), w1)), p(l + ".moe.experts.w2")).sum(0) /
                           static_cast<double>(w1.size(0));
      const at::Tensor gate = at::sigmoid(at::linear(h, p(l + ".moe.router.weight"), bias(l + ".moe.router.bias")))
                                  .mean(-1, /*keepdim=*/true);
      h = h + y * gate;
    }
    const at::Tensor loss = at::linear(h, p("out.weight"), bias("out.bias")).mean();
    torch::autograd::backward({loss});
    torch::autograd::AutoGradMode no_grad(false);
    for (auto& [name, t] : params_) {
      if (!t.grad().defined()) continue;
      t.sub_(t.grad(), lr);
      t.mutable_grad() = at::Tensor();
    }
  }

 private:
  const at::Tensor& p(const std::string& name) const { return params_.at(name); }
  at::Tensor bias(const std::string& name) const {
    auto it = params_.find(name);
    return it == params_.end() ? at::Tensor() : it->second;
  }
  int blocks_;
  std::map<std::string, at::Tensor> params_;
};

void BM_PlainLibTorchStep(benchmark::State& state) {
  at::set_num_threads(1);  // as every ThreadWorld rank runs (one intra-op thread): like for like
  const harness::Scenario sc = model_of(state.range(0) == 1);
  auto model = harness::build_model(sc, {/*reference=*/true, nullptr});
  PlainTwin twin(sc, *model);
  if (!twin.complete()) {
    state.SkipWithError("the plain twin does not know this model's parameters");
    return;
  }
  const at::Tensor input = harness::input_of(sc, 0, 0);
  for (auto _ : state) twin.step(input, sc.optimizer.lr);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PlainLibTorchStep)->Arg(0)->Arg(1)->Apply(steady)->Unit(benchmark::kMillisecond)->UseRealTime();

// One rank at world 1 training `sc` in the timed loop, its tensors where `probe` puts them, the
// timeline on or off, each step ended by a device synchronize (nothing on the CPU); `warm_up`
// untimed steps first.
void time_native_steps(benchmark::State& state, const harness::Scenario& sc, const memory::Probe& probe,
                       bool timeline, int warm_up) {
  memory::install_counting_allocator();
  comm::ThreadWorld world({1, std::chrono::milliseconds(600000)});
  const auto outcomes = world.run([&](std::shared_ptr<comm::Communicator> comm) {
    memory::AllocationRankGuard tag(0);
    probe.warm_up();
    fsdp::RankRuntime rt(0, sc.profile, probe);
    rt.set_timeline_enabled(timeline);
    auto dense = mesh::DeviceMesh::world_mesh(comm, "dp");
    harness::BuildOptions build;
    build.device = probe.device();
    auto model = harness::build_model(sc, build);
    harness::apply_fully_shard(*model, sc, dense, dense, rt);
    train::ShardedOptimizer opt(rt.groups(), sc.optimizer, rt);
    const train::StepPlan plan = harness::step_plan(sc);
    const train::LossFn loss = harness::loss_fn(sc);
    const at::Tensor input = harness::input_of(sc, 0, 0, 0, 0, probe.device());
    int step = 0;
    auto one_step = [&] {
      train::train_step(*model, plan, [&](int, int) { return input; }, loss, &opt, rt, step++);
      rt.timeline().clear();  // a step's worth at a time, as a case keeps
      probe.synchronize();
    };
    for (int i = 0; i < warm_up; ++i) one_step();
    // The rank's thread runs the timed loop: Google Benchmark only needs one thread to drive it.
    for (auto _ : state) one_step();
  });
  if (!outcomes[0].ok) state.SkipWithError(outcomes[0].error.c_str());
  state.SetItemsProcessed(state.iterations());
}

void BM_NativeStepWorld1(benchmark::State& state) {
  time_native_steps(state, model_of(state.range(0) == 1), memory::Probe::cpu(), /*timeline=*/false, /*warm_up=*/0);
}
BENCHMARK(BM_NativeStepWorld1)->Arg(0)->Arg(1)->Apply(steady)->Unit(benchmark::kMillisecond)->UseRealTime();

// The large model's step on the GPU (issue 8): the standard large scenario (8 gated MoE blocks, dim
// 4096, bfloat16, nested experts, full AC) at world 1 on CUDA; arg 0 without the timeline, arg 1
// with it (the probe's allocator reads at every event); the plan's steps first as warm-up, as the
// torch FSDP2 side of the ratio does (the exported script's `--time-steps`; ci/bench-gpu.sh runs
// both).
void BM_NativeLargeStepCuda(benchmark::State& state) {
  if (!memory::cuda_device_available()) return state.SkipWithError("no CUDA device");
  const harness::Scenario sc = harness::standard_large_scenario();
  time_native_steps(state, sc, memory::Probe::named("cuda", "device"), state.range(0) == 1, sc.steps);
}
BENCHMARK(BM_NativeLargeStepCuda)->Arg(0)->Arg(1)->Apply(steady)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace shardfuzz::bench
