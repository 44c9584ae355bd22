// The reference, trained at most once per distinct scenario in a process (a few most recent kept).
#include "harness/reference/reference.h"

#include "harness/model/model_builder.h"
#include "harness/scenario/scenario_json.h"
#include "runtime/comm/blas_threads.h"
#include "runtime/train/reference.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>

namespace shardfuzz::harness {
namespace {

constexpr std::size_t kCached = 8;

// What the reference depends on: the scenario but its name, profile (the reference builds no
// profile-dependent part) and fault plan (it injects none).
std::string key_of(const Scenario& sc) {
  nlohmann::json j = to_json(sc);
  j.erase("name");
  j.erase("profile");
  j.erase("faults");
  return j.dump();
}

// `compute`, when given, overrides the dtype the ranks compute and reduce in (the rounding twin).
std::shared_ptr<const Reference> train_reference(const Scenario& sc, std::optional<c10::ScalarType> compute) {
  BuildOptions as_reference;
  as_reference.reference = true;
  auto model = build_model(sc, as_reference);
  auto input = [&](int rank, int step, int micro, int forward) { return input_of(sc, rank, step, micro, forward); };
  // A low-precision model reduces per rank like FSDP does (a bfloat16 gradient summed over the
  // ranks' batches in autograd would round differently): the policy path with its own dtype.
  fsdp::MixedPrecisionPolicy policy = sc.mp_policy();
  if (!policy.param_dtype && sc.compute_dtype() != c10::ScalarType::Float) policy.param_dtype = sc.compute_dtype();
  if (compute) policy.param_dtype = policy.reduce_dtype = *compute;
  train::ReferenceRun run =
      train::run_reference(*model, sc.world_size, sc.steps, step_plan(sc), input, loss_fn(sc), sc.optimizer, policy,
                           reference_batches_ranks(sc));
  auto out = std::make_shared<Reference>();
  out->losses = std::move(run.losses);
  for (auto& [fqn, p] : model->named_parameters()) out->parameters[fqn] = p->detach();
  return out;
}

std::mutex g_mu;
std::deque<std::pair<std::string, std::shared_ptr<const Reference>>> g_cache;  // most recent first
std::atomic<int> g_trained{0};

std::shared_ptr<const Reference> cached(const std::string& key, const std::function<std::shared_ptr<const Reference>()>& train) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (const auto& [k, ref] : g_cache)
      if (k == key) return ref;
  }
  auto ref = train();  // outside the lock: references of different scenarios may train at once
  ++g_trained;
  std::lock_guard<std::mutex> lock(g_mu);
  g_cache.emplace_front(key, ref);
  if (g_cache.size() > kCached) g_cache.pop_back();
  return ref;
}

}  // namespace

std::shared_ptr<const Reference> reference_of(const Scenario& sc) {
  return cached(key_of(sc), [&] { return train_reference(sc, std::nullopt); });
}

std::shared_ptr<const Reference> rounding_twin_of(const Scenario& sc) {
  if (sc.compute_dtype() != c10::ScalarType::Float) {
    Scenario f32 = sc;
    f32.dtype = "float32";
    f32.mixed_precision.reset();
    return reference_of(f32);
  }
  return cached(key_of(sc) + " computed in float64", [&] { return train_reference(sc, c10::ScalarType::Double); });
}

void attach_reference(const Scenario& sc, RunRecord& run) {
  if (!run.ok() || !run.observed.shard_values) return;
  for (const FiredFault& f : run.fired_faults)
    if (sc.faults.at(static_cast<std::size_t>(f.fault)).is_nonfinite()) return;
  run.reference = reference_of(sc);
}

ReferenceInBackground::ReferenceInBackground(const Scenario& sc, bool wanted, bool shape_only) {
  const bool nonfinite =
      std::any_of(sc.faults.begin(), sc.faults.end(), [](const FaultSpec& f) { return f.is_nonfinite(); });
  if (!wanted || shape_only || nonfinite) return;
  // It trains beside the ranks, which are the parallelism (the threads backend's ThreadWorld has
  // set this already; the process backend's launcher sets it here, before the thread starts).
  comm::one_intra_op_thread_per_process();
  thread_ = std::thread([sc] {
    // A new thread starts with OpenMP's and MKL's default team (every core): without this, each
    // of 16 --jobs shards ran its reference's larger matmuls on 16 threads (a torch wheel's build:
    // 115 against 357 cases/s at 16 jobs on the H100 host, 2026-12-06).
    at::init_num_threads();
    try {
      reference_of(sc);
    } catch (...) {  // attach_reference trains it again and reports the error
    }
  });
}

ReferenceInBackground::~ReferenceInBackground() { wait(); }

void ReferenceInBackground::wait() {
  if (thread_.joinable()) thread_.join();
}

int references_trained() { return g_trained.load(); }

bool reference_batches_ranks(const Scenario& sc) {
  const bool rows_alone = std::none_of(sc.blocks.begin(), sc.blocks.end(), [](const BlockSpec& b) {
    return b.attention || b.kind == BlockSpec::Kind::RoutedMoe;
  });
  return rows_alone && !sc.mixed_precision && sc.compute_dtype() == c10::ScalarType::Float;
}

}  // namespace shardfuzz::harness
