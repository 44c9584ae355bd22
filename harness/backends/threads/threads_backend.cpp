// One model per rank thread (harness/backends/rank_run.h), in one ThreadWorld.
#include "harness/backends/threads/threads_backend.h"

#include "harness/backends/rank_run.h"
#include "harness/reference/reference.h"
#include "runtime/comm/thread_world.h"
#include "runtime/compat/torch_compat.h"
#include "runtime/memory/counting_allocator.h"

#include <algorithm>
#include <chrono>
#include <mutex>

namespace shardfuzz::harness {

std::vector<memory::TimelineEvent> RankRecord::events_of_step(int step, memory::Category category) const {
  return memory::events_of_step(timeline, step, category);
}

std::string without_backtrace(const std::string& message) {
  return compat::without_backtrace(message);
}

namespace {

class ThreadsBackend : public Backend {
 public:
  explicit ThreadsBackend(const RunOptions& options) : options_(options) {}
  std::string name() const override { return "threads"; }
  RunRecord run(const Scenario& scenario) override { return run_threads(scenario, options_); }
  bool is_embedded_default() const override {
    const RunOptions d;
    return options_.deadline == d.deadline && options_.optimizer_step == d.optimizer_step &&
           options_.record_timeline == d.record_timeline && options_.recover == d.recover &&
           options_.device == d.device && options_.unscheduled == d.unscheduled;
  }

 private:
  RunOptions options_;
};

}  // namespace

RunRecord run_threads(const Scenario& sc, const RunOptions& options) {
  sc.validate();
  const memory::Probe probe = rank_probe(sc, options, /*ranks_share_a_process=*/true);
  memory::install_counting_allocator();
  comm::ThreadWorldOptions world_options{sc.world_size, options.deadline, std::nullopt};
  if (!options.unscheduled) world_options.schedule = sc.schedule ? sc.schedule->to_comm() : comm::Schedule{};
  comm::ThreadWorld world(world_options);
  RunRecord run;
  run.device = probe.name();
  if (probe.shape_only()) run.observed.values = run.observed.shard_values = false;
  run.deadline_ms = static_cast<int>(options.deadline.count());
  run.ranks.resize(static_cast<std::size_t>(sc.world_size));
  run.recovery = options.recover && std::any_of(sc.faults.begin(), sc.faults.end(),
                                                [](const FaultSpec& f) { return f.is_recoverable(); });
  std::mutex fired_mu;
  ReferenceInBackground reference(sc, options.reference, probe.shape_only());
  const RankRunShared shared{sc, options, probe, run, fired_mu, std::chrono::steady_clock::now()};
  auto outcomes = world.run([&](std::shared_ptr<comm::Communicator> world_comm) { run_rank(shared, world_comm); });
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - shared.t0).count();
  run.schedule = world.schedule_record();
  std::vector<RankFailure> failures;
  for (const auto& o : outcomes) {
    run.ranks.at(static_cast<std::size_t>(o.rank)).collectives_after_abort = o.collectives_after_abort;
    if (!o.ok) failures.push_back({o.rank, o.error, error_kind(o.exception)});
  }
  set_root_failure(run, failures);
  reference.wait();
  if (options.reference) attach_reference(sc, run);
  return run;
}

std::unique_ptr<Backend> make_threads_backend(const RunOptions& options) { return std::make_unique<ThreadsBackend>(options); }

Backend& threads_backend() {
  static ThreadsBackend backend{RunOptions{}};
  return backend;
}

}  // namespace shardfuzz::harness
