// One rank's run of a scenario, whichever backend hosts it (a thread of ThreadWorld, or a rank
// process): its faults, meshes, model, wrapping, steps and records.
#include "harness/backends/rank_run.h"

#include "harness/model/model_builder.h"
#include "harness/subprocess/resident_set.h"
#include "runtime/ac/checkpoint.h"
#include "runtime/comm/faulty_communicator.h"
#include "runtime/compat/torch_compat.h"
#include "runtime/comm/thread_world.h"
#include "runtime/fsdp/param_group.h"
#include "runtime/fsdp/rank_runtime.h"
#include "runtime/mesh/device_mesh.h"
#include "runtime/nn/routed_moe.h"
#include "runtime/train/recovery.h"
#include "runtime/train/step.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <limits>

namespace shardfuzz::harness {

std::string error_kind(const std::exception_ptr& ex) {
  try {
    if (ex) std::rethrow_exception(ex);
  } catch (const comm::RankCrash&) {
    return "crash";
  } catch (const c10::OutOfMemoryError&) {
    return "out_of_memory";
  } catch (const comm::CollectiveError& e) {
    switch (e.kind) {
      case comm::CollectiveError::Kind::Mismatch: return "collective_mismatch";
      case comm::CollectiveError::Kind::Deadline: return "deadline";
      case comm::CollectiveError::Kind::Aborted: return "aborted";
      case comm::CollectiveError::Kind::InvalidArgument: return "collective_invalid_argument";
      case comm::CollectiveError::Kind::Injected: return "injected";
    }
  } catch (...) {
  }
  return "exception";
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Stamps when the rank's function leaves by an exception (the rank's detection time).
class FailureStamp {
 public:
  FailureStamp(RankRecord& rec, Clock::time_point t0) : rec_(rec), t0_(t0), unwinding_(std::uncaught_exceptions()) {}
  ~FailureStamp() {
    if (std::uncaught_exceptions() > unwinding_) rec_.failed_at_seconds = seconds_since(t0_);
  }

 private:
  RankRecord& rec_;
  Clock::time_point t0_;
  int unwinding_;
};

// The scenario's faults for `rank` as collective faults (a hang stays away half a second past the
// deadline, so its peers' deadline fires first); the observer records each one that fires.
std::shared_ptr<comm::Communicator> with_faults(const Scenario& sc, int rank, std::shared_ptr<comm::Communicator> comm,
                                                const RunOptions& options, RunRecord& run, std::mutex& mu,
                                                Clock::time_point t0) {
  using Action = comm::CollectiveFault::Action;
  std::vector<comm::CollectiveFault> plan;
  std::vector<int> index;
  for (std::size_t i = 0; i < sc.faults.size(); ++i) {
    const FaultSpec& f = sc.faults[i];
    const CollectiveFault* planned = f.at_collective();
    if (f.rank != rank || !planned) continue;
    using Kind = CollectiveFault::Kind;
    comm::CollectiveFault c;
    c.collective = static_cast<uint64_t>(planned->collective);
    c.action = planned->kind == Kind::Straggler ? Action::Delay
               : planned->kind == Kind::Hang    ? Action::Hang
               : planned->kind == Kind::Crash   ? Action::Crash
               : planned->kind == Kind::Abort   ? Action::Abort
                                                : Action::Error;
    c.delay = planned->kind == Kind::Straggler ? std::chrono::milliseconds(planned->delay_ms)
              : planned->kind == Kind::Hang    ? options.deadline + std::chrono::milliseconds(500)
                                               : std::chrono::milliseconds(0);
    plan.push_back(c);
    index.push_back(static_cast<int>(i));
  }
  if (plan.empty()) return comm;
  return comm::FaultyCommunicator::wrap(
      std::move(comm), plan,
      [&run, &mu, &sc, rank, t0, plan, index](const comm::CollectiveFault& f, const std::string& group, const std::string& op) {
        int which = index.front();
        for (std::size_t k = 0; k < plan.size(); ++k)
          if (plan[k].collective == f.collective && plan[k].action == f.action) which = index[k];
        std::lock_guard<std::mutex> lock(mu);
        run.fired_faults.push_back({which, rank, sc.faults[static_cast<std::size_t>(which)].kind_name(), group, op, seconds_since(t0)});
      });
}

// The scenario's faults inside modules for `rank`, once per run at the planned step: an exception
// thrown by the module's forward, or by a gradient hook on its output when backward reaches it; a
// NaN or Inf written into that gradient (the run goes on).
void install_module_faults(const Scenario& sc, int rank, nn::Module& model, const fsdp::RankRuntime& rt, RunRecord& run,
                           std::mutex& mu, Clock::time_point t0) {
  for (std::size_t i = 0; i < sc.faults.size(); ++i) {
    const ModuleFault* f = sc.faults[i].in_module();
    if (!f || sc.faults[i].rank != rank) continue;
    nn::Module* m = model.find(f->module);
    if (!m) continue;
    const std::string name = f->module.empty() ? "root" : f->module;
    const bool exception = f->kind == ModuleFault::Kind::Exception;
    const std::string pass = exception ? name_of(f->pass) : "backward";
    auto note = [&run, &mu, t0, i, rank, name, pass, kind = sc.faults[i].kind_name(), step = f->step] {
      std::lock_guard<std::mutex> lock(mu);
      run.fired_faults.push_back({static_cast<int>(i), rank, kind, name, pass, seconds_since(t0), step});
    };
    const std::string what = "injected exception in " + pass + " of " + name + " at step " + std::to_string(f->step + 1) +
                             " on rank " + std::to_string(rank);
    const bool nonfinite = !exception;
    const double poison = f->kind == ModuleFault::Kind::Nan ? std::numeric_limits<double>::quiet_NaN()
                                                            : std::numeric_limits<double>::infinity();
    auto armed = std::make_shared<bool>(true);
    m->set_call_fault([&rt, step = f->step, pass, armed, note, what, nonfinite, poison](nn::Module&,
                                                                                   const at::Tensor& out) -> at::Tensor {
      if (!*armed || rt.step() != step) return out;
      if (pass == "forward") {
        *armed = false;
        note();
        throw std::runtime_error(what);
      }
      if (!out.requires_grad()) return out;  // a no_grad call (eval, reentrant AC's first forward)
      *armed = false;
      out.register_hook([note, what, nonfinite, poison](const at::Tensor& grad) -> at::Tensor {
        note();
        if (!nonfinite) throw std::runtime_error(what);
        at::Tensor g = grad.clone();
        g.view(-1)[0].fill_(poison);
        return g;
      });
      return out;
    });
  }
}

// The scenario's allocation faults for `rank`, armed from the start of training to the end of
// the run (disarmed however it ends: the counters outlive the run in a persistent worker).
class AllocationFaults {
 public:
  AllocationFaults(const Scenario& sc, int rank, const fsdp::RankRuntime& rt, RunRecord& run, std::mutex& mu,
                   Clock::time_point t0)
      : rank_(rank) {
    std::vector<memory::AllocationFault> plan;
    for (std::size_t i = 0; i < sc.faults.size(); ++i) {
      const AllocationFault* f = sc.faults[i].in_allocator();
      if (!f || sc.faults[i].rank != rank) continue;
      memory::AllocationFault a;
      if (const auto* at = std::get_if<AllocationFault::AtAllocation>(&f->trigger)) a.at_allocation = at->index;
      else a.limit_bytes = std::get<AllocationFault::AboveBytes>(f->trigger).limit;
      a.on_fire = [&run, &mu, &rt, t0, i, rank](int64_t index, int64_t bytes) {
        std::lock_guard<std::mutex> lock(mu);
        run.fired_faults.push_back({static_cast<int>(i), rank, kOomFaultName, "allocator",
                                    "allocation #" + std::to_string(index) + " of " + std::to_string(bytes) + " B",
                                    seconds_since(t0), rt.step()});
      };
      plan.push_back(std::move(a));
    }
    armed_ = !plan.empty();
    if (armed_) memory::arm_allocation_faults(rank, std::move(plan));
  }
  ~AllocationFaults() {
    if (armed_) memory::disarm_allocation_fault(rank_);
  }
  AllocationFaults(const AllocationFaults&) = delete;
  AllocationFaults& operator=(const AllocationFaults&) = delete;

 private:
  int rank_;
  bool armed_ = false;
};

RecoveryRecord recovery_record(train::StepFailure&& failure, int64_t baseline_bytes, Clock::time_point t0) {
  RecoveryRecord r;
  r.step = failure.step;
  r.attempt = failure.attempt;
  r.error = failure.message;
  r.error_kind = error_kind(failure.error);
  r.caught_at_seconds = std::chrono::duration<double>(failure.caught_at - t0).count();
  r.recovered_at_seconds = std::chrono::duration<double>(failure.recovered_at - t0).count();
  r.bytes_at_step_begin = failure.at_step_begin.allocated_bytes - baseline_bytes;
  r.bytes_after_reset = failure.after_reset.allocated_bytes - baseline_bytes;
  r.ledger_at_step_begin = failure.at_step_begin.ledger;
  r.ledger_after_reset = failure.after_reset.ledger;
  r.unsharded_after_reset = std::move(failure.after_reset.unsharded);
  r.pending_all_gather_after_reset = std::move(failure.after_reset.pending_all_gather);
  r.events = std::move(failure.events);
  return r;
}

// Every parameter's local shard as the rank ends with it (copied to the CPU), for the run's
// properties and the reference.
std::vector<ShardRecord> shard_records(fsdp::RankRuntime& rt, nn::Model& model, const Scenario& sc) {
  std::vector<ShardRecord> shards;
  for (fsdp::ParamGroup* g : rt.groups())
    for (auto& p : g->params()) {
      ShardRecord shard;
      shard.group = g->name();
      shard.fqn = p.fqn();
      shard.shard_rank = g->mesh().shard->rank();
      shard.shard_size = g->mesh().shard->size();
      shard.shard_dim = p.shard_dim();
      // A shape-only run's shards have sizes and no values: nothing to copy.
      if (!p.local_shard().is_meta()) shard.local = p.local_shard().to(at::kCPU, /*non_blocking=*/false, /*copy=*/true);
      shard.padded_bytes = p.padded_sharded_numel() * p.element_size();
      shard.unsharded_bytes = p.unsharded_padded_numel() * p.unsharded_element_size();
      shard.requires_grad = p.requires_grad();
      const std::string owner = p.fqn().substr(0, p.fqn().rfind('.'));
      if (auto* ex = dynamic_cast<nn::RoutedExperts*>(model.find(owner)); ex && sc.expert_parallel) {
        shard.full_begin = ex->first_local_expert();
        shard.full_rows = ex->num_local_experts();
      }
      shards.push_back(std::move(shard));
    }
  return shards;
}

}  // namespace

memory::Probe rank_probe(const Scenario& sc, const RunOptions& options, bool ranks_share_a_process, bool warm) {
  if (sc.shape_only && options.device != "cpu" && options.device != "meta")
    throw std::invalid_argument("shape_only: the scenario holds no data and runs on the meta device, not on " +
                                options.device + " (drop --device, or drop shape_only to run it with data)");
  if (sc.shape_only && !ranks_share_a_process)
    throw std::invalid_argument("shape_only: runs on the threads backend only (its ranks meet in memory; rank "
                                "processes would exchange data a shape-only run does not have)");
  memory::Probe probe = memory::Probe::named(sc.shape_only ? "meta" : options.device, "--device", warm);
  if (probe.on_device() && ranks_share_a_process && sc.world_size > 1)
    throw std::invalid_argument(
        "world_size: " + std::to_string(sc.world_size) + " ranks as threads cannot share " + probe.name() +
        ": LibTorch runs every thread's CUDA backward on one engine thread per device, so ranks that meet in a "
        "backward collective wait on each other forever (docs/gpu-path.md); run world size 1 on the device, or use "
        "--backend process --nproc " + std::to_string(sc.world_size) + " --device " + options.device);
  for (std::size_t i = 0; i < sc.faults.size(); ++i)
    if (probe.on_device() && sc.faults[i].in_allocator())
      throw std::invalid_argument("faults[" + std::to_string(i) + "].kind: oom is injected by the CPU allocator probe, "
                                  "not on " + probe.name());
  return probe;
}

void run_rank(const RankRunShared& shared, const std::shared_ptr<comm::Communicator>& world_comm) {
  const Scenario& sc = shared.scenario;
  const RunOptions& options = shared.options;
  const memory::Probe& probe = shared.probe;
  const c10::Device device = probe.device();
  const int world_size = sc.world_size;
  RunRecord& run = shared.run;
  std::mutex& fired_mu = shared.mu;
  const Clock::time_point t0 = shared.t0;
  const int rank = world_comm->global_rank();
  memory::AllocationRankGuard tag(rank);
  RankRecord& rec = run.ranks[static_cast<std::size_t>(rank)];
  rec.rank = rank;
  FailureStamp stamp(rec, t0);
  std::shared_ptr<comm::Communicator> comm = with_faults(sc, rank, world_comm, options, run, fired_mu, t0);
  probe.warm_up();  // what LibTorch keeps per thread on a device is not the rank's
  rec.baseline_bytes = probe.bytes(rank).current;
  {
    fsdp::RankRuntime rt(rank, sc.profile, probe);
    rt.set_timeline_enabled(options.record_timeline);
    ac::RegionObserverGuard checkpoints(rt.checkpoint_observer());
    rt.set_check_finite_grads(std::any_of(sc.faults.begin(), sc.faults.end(),
                                          [](const FaultSpec& f) { return f.is_nonfinite(); }));
    {
      auto dense = mesh::DeviceMesh::world_mesh(comm, "dp");
      const int k = sc.expert_shard_size == 0 ? world_size : sc.expert_shard_size;
      mesh::DeviceMesh hsdp(comm, {world_size / k, k}, {"ep", "dp_mod_ep"});
      // Expert parallel: experts are partitioned over "ep" and sharded over "dp_mod_ep" only.
      const mesh::DeviceMesh experts = sc.expert_shard_size == 0 ? dense
                                       : sc.expert_parallel  ? hsdp.submesh({"dp_mod_ep"})
                                                             : hsdp;
      BuildOptions build;
      if (sc.expert_parallel) build.ep = hsdp.dim("ep").group;
      build.device = device;

      auto model = build_model(sc, build);
      install_module_faults(sc, rank, *model, rt, run, fired_mu, t0);
      apply_fully_shard(*model, sc, dense, experts, rt);
      // Peaks from here on are training's: building the full model before sharding is not.
      probe.reset_peak(rank);
      const auto at_reset = probe.bytes(rank);
      const int64_t peak_origin = at_reset.current;
      rec.peak_above_current_at_reset = at_reset.peak - at_reset.current;
      AllocationFaults allocation_faults(sc, rank, rt, run, fired_mu, t0);
      std::unique_ptr<train::ShardedOptimizer> opt;
      if (options.optimizer_step) opt = std::make_unique<train::ShardedOptimizer>(rt.groups(), sc.optimizer, rt);
      const train::StepPlan plan = step_plan(sc);
      train::RecoveryOptions recovery;
      recovery.on_recovery = [&](train::StepFailure&& failure) {
        rec.recoveries.push_back(recovery_record(std::move(failure), rec.baseline_bytes, t0));
      };
      for (int s = 0; s < sc.steps; ++s) {
        auto batch = [&](int micro, int forward) { return input_of(sc, rank, s, micro, forward, device); };
        auto step = [&] { return train::train_step(*model, plan, batch, loss_fn(sc), opt.get(), rt, s); };
        try {
          rec.losses.push_back(run.recovery
                                   ? train::run_step_with_recovery(step, s, *comm, *model, rt, opt.get(), recovery)
                                   : step());
        } catch (...) {
          rec.device_snapshot = probe.snapshot();  // what the device held where the rank failed
          throw;
        }
        if (s + 1 == sc.steps) rec.device_snapshot = probe.snapshot();
        rec.step_end_bytes.push_back(probe.bytes(rank).current - rec.baseline_bytes);
        if (rank == 0) run.host_rss_bytes.push_back(resident_set_bytes());  // only rank 0 writes it
      }
      rec.training_peak_bytes = probe.bytes(rank).peak - peak_origin;
      memory::AllocationRankGuard untagged(-1);  // the records are the harness's, not the rank's
      rec.shards = shard_records(rt, *model, sc);
    }
    rt.set_step(sc.steps);
    rt.record(memory::Event::Teardown, "", {});
    rec.timeline = rt.timeline().take_from(0);  // moved: the runtime records nothing more
  }
  rec.teardown_bytes = probe.bytes(rank).current;
}

void set_root_failure(RunRecord& run, const std::vector<RankFailure>& failures) {
  for (const RankFailure& f : failures) run.ranks[static_cast<std::size_t>(f.rank)].error = without_backtrace(f.error);
  // Report the failure that started it all, not the aborts it caused on the other ranks.
  const RankFailure* root = nullptr;
  for (const RankFailure& f : failures)
    if (!root || (root->kind == "aborted" && f.kind != "aborted")) root = &f;
  if (root) {
    run.error = "rank " + std::to_string(root->rank) + ": " + without_backtrace(root->error);
    run.error_kind = root->kind;
  }
}

}  // namespace shardfuzz::harness
