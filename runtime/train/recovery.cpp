// Step recovery: checkpoint, reset, rendezvous, retry.
#include "runtime/train/recovery.h"

#include "runtime/autograd/failed_backward.h"
#include "runtime/comm/faulty_communicator.h"
#include "runtime/compat/torch_compat.h"
#include "runtime/fsdp/param_group.h"
#include "runtime/fsdp/state.h"
#include "runtime/memory/counting_allocator.h"

#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace shardfuzz::train {
namespace {

using Clock = std::chrono::steady_clock;

std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return compat::without_backtrace(e.what());
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

bool is_recoverable(const std::exception_ptr& error) {
  if (!error) return false;
  try {
    std::rethrow_exception(error);
  } catch (const comm::RankCrash&) {
    return false;
  } catch (const comm::CollectiveError& e) {
    return e.kind == comm::CollectiveError::Kind::Aborted;
  } catch (const c10::OutOfMemoryError&) {
    return true;
  } catch (const c10::Error&) {
    return false;
  } catch (const std::logic_error&) {
    return false;
  } catch (const std::exception&) {
    return true;
  } catch (...) {
    return false;
  }
}

StepCheckpoint::StepCheckpoint(const std::vector<fsdp::ParamGroup*>& groups, const ShardedOptimizer* optimizer) {
  memory::AllocationRankGuard host(-1);
  for (fsdp::ParamGroup* g : groups) {
    shards_.emplace_back();
    grads_.emplace_back();
    for (auto& p : g->params()) {
      shards_.back().push_back(p.sharded_data().clone());
      grads_.back().push_back(p.sharded_grad().defined() ? p.sharded_grad().clone() : at::Tensor());
    }
  }
  if (optimizer) optimizer_ = optimizer->save();
}

void StepCheckpoint::restore(const std::vector<fsdp::ParamGroup*>& groups, ShardedOptimizer* optimizer) const {
  torch::autograd::AutoGradMode no_grad(false);
  for (std::size_t gi = 0; gi < groups.size(); ++gi) {
    auto& params = groups[gi]->params();
    for (std::size_t i = 0; i < params.size(); ++i) {
      params[i].sharded_data().copy_(shards_.at(gi).at(i));
      const at::Tensor& grad = grads_.at(gi).at(i);
      if (!grad.defined()) {
        params[i].clear_sharded_grad();
      } else if (params[i].sharded_grad().defined()) {
        params[i].sharded_grad().copy_(grad);
      } else {
        params[i].accumulate_sharded_grad(grad);
      }
    }
  }
  if (optimizer) optimizer->restore(optimizer_);
}

RuntimeSnapshot RuntimeSnapshot::of(fsdp::RankRuntime& runtime) {
  RuntimeSnapshot s;
  s.allocated_bytes = runtime.probe().bytes(runtime.rank()).current;
  s.ledger = runtime.ledger().totals();
  for (fsdp::ParamGroup* g : runtime.groups()) {
    if (g->sharded_state() != fsdp::ShardedState::Sharded) s.unsharded.push_back(g->name());
    if (g->has_pending_all_gather()) s.pending_all_gather.push_back(g->name());
  }
  std::sort(s.unsharded.begin(), s.unsharded.end());
  std::sort(s.pending_all_gather.begin(), s.pending_all_gather.end());
  return s;
}

double run_step_with_recovery(const std::function<double()>& step_fn, int step, comm::Communicator& world,
                              nn::Module& model, fsdp::RankRuntime& runtime, ShardedOptimizer* optimizer,
                              const RecoveryOptions& options) {
  const std::vector<fsdp::ParamGroup*> groups = runtime.groups();
  for (int attempt = 0;; ++attempt) {
    const std::size_t first_event = runtime.timeline().size();
    StepFailure failure;
    failure.step = step;
    failure.attempt = attempt;
    failure.at_step_begin = RuntimeSnapshot::of(runtime);
    std::optional<StepCheckpoint> checkpoint(std::in_place, groups, optimizer);
    try {
      const double result = step_fn();
      world.barrier();  // the commit: every rank has finished this step
      return result;
    } catch (...) {
      failure.error = std::current_exception();
    }
    failure.caught_at = Clock::now();
    failure.message = message_of(failure.error);
    if (!is_recoverable(failure.error) || attempt + 1 >= options.max_attempts) std::rethrow_exception(failure.error);
    world.abort_world(failure.message);  // a no-op when a peer's failure aborted it first
    autograd::drop_failed_backward_tasks();
    fsdp::reset_after_fault(model);
    checkpoint->restore(groups, optimizer);
    checkpoint.reset();
    failure.after_reset = RuntimeSnapshot::of(runtime);
    const int recoveries = world.recover_world();
    failure.recovered_at = Clock::now();
    runtime.set_step(step);
    runtime.record(memory::Event::Recovered, "",
                   {{"attempt", attempt}, {"recoveries", recoveries}, {"error", failure.message}});
    failure.events = runtime.timeline().take_from(first_event);
    if (options.on_recovery) options.on_recovery(std::move(failure));
  }
}

}  // namespace shardfuzz::train
