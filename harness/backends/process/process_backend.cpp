// The launcher: a pool of rank processes, one case at a time.
#include "harness/backends/process/process_backend.h"

#include "harness/backends/process/pool_protocol.h"
#include "harness/backends/process/rank_process.h"
#include "harness/backends/rank_run.h"
#include "harness/reference/reference.h"
#include "harness/run/run_record_json.h"
#include "harness/scenario/scenario_json.h"
#include "harness/subprocess/child.h"
#include "harness/subprocess/exit_status.h"
#include "runtime/comm/nccl_world.h"
#include "runtime/comm/store_world.h"
#include "runtime/memory/device_memory.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace shardfuzz::harness::process {
namespace {

using Clock = std::chrono::steady_clock;

std::string this_executable() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot read /proc/self/exe to start rank processes");
  return std::string(buf, static_cast<std::size_t>(n));
}

int64_t wall_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// "signal 6 (Aborted)", "exit code 3": how docs/cli.md quotes a rank process's death.
std::string exit_description(int status) {
  const auto how = subprocess::ExitStatus::from_wait(status);
  if (how.signalled()) return "signal " + std::to_string(how.signal) + " (" + strsignal(how.signal) + ")";
  return "exit code " + std::to_string(how.code);
}

// The rank processes of one world size, and the store they rendezvous through.
class RankPool {
 public:
  RankPool(const ProcessOptions& options, int world) : world_(world) {
    static std::atomic<int> pools{0};
    pool_ = "pool" + std::to_string(getpid()) + "-" + std::to_string(pools++);
    store_ = tcp_store("127.0.0.1", /*port=*/0, /*serve=*/true);  // the kernel picks a free port
    const std::string worker = options.worker.empty() ? this_executable() : options.worker;
    for (int r = 0; r < world; ++r) spawn(worker, options.comm, r);
  }

  // An external launch's ranks (--join), seen from its rank 0: nothing to start. This process
  // serves (or joins torchrun's) store and is rank 0 as well, on a thread of its own.
  explicit RankPool(const RankEnv& rank0) : world_(rank0.world_size), pool_(rank0.pool), joined_(true) {
    store_ = connect_rank_store(rank0, /*serve=*/!launch_has_agent_store());
    rank0_ = std::thread([rank0] {
      try {
        serve_cases(connect_rank_store(rank0), rank0, [] { return false; });
      } catch (const std::exception& e) {
        std::fprintf(stderr, "shardfuzz: rank 0 of the joined launch stopped serving: %s\n", e.what());
      }
    });
  }

  ~RankPool() {
    try {
      store_->set(stop_key(pool_), std::vector<uint8_t>{1});
    } catch (const std::exception&) {
    }
    const auto until = Clock::now() + std::chrono::seconds(2);
    for (subprocess::Child& rank : ranks_) {
      if (!rank.running()) continue;
      if (!rank.wait_exit(std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()))) {
        rank.kill();
        rank.reap();
      }
    }
    if (rank0_.joinable()) rank0_.join();  // it sees the stop key within 5 ms (or is already out)
    if (joined_) {
      // This process may be the store's server: the other ranks must have read the stop first.
      std::vector<std::string> stopped;
      for (int r = 1; r < world_; ++r) stopped.push_back(stopped_key(pool_, r));
      const auto until = Clock::now() + std::chrono::seconds(10);
      try {
        while (!stopped.empty() && !store_->check(stopped) && Clock::now() < until)
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
      } catch (const std::exception&) {
      }
    }
  }

  int world() const { return world_; }
  bool broken() const { return broken_; }

  RunRecord run(const Scenario& sc, const RunOptions& options, bool recovery, std::chrono::seconds limit,
                const std::string& backend) {
    const int64_t k = next_case_++;
    const std::string text = to_json_text(sc);
    const nlohmann::json job = {{"scenario", nlohmann::json::parse(text)},
                                {"hash", scenario_hash(text)},
                                {"options", to_json(options)},
                                {"recovery", recovery},
                                {"start_ns", wall_clock_ns()}};
    const std::string payload = job.dump();
    store_->set(case_key(pool_, k), std::vector<uint8_t>(payload.begin(), payload.end()));

    RunRecord run;
    run.backend = backend;
    run.device = options.device;
    run.deadline_ms = static_cast<int>(options.deadline.count());
    run.recovery = recovery;
    run.ranks.resize(static_cast<std::size_t>(world_));
    Case c{sc, options, limit, k, {}, {}, Clock::now(), {}, Clock::time_point::max()};
    for (int r = 0; r < world_; ++r) c.keys.push_back(record_key(pool_, k, r));
    await_records(c, run);
    run.seconds = std::chrono::duration<double>(Clock::now() - c.t0).count();
    collect_records(c, run);
    store_->deleteKey(case_key(pool_, k));
    std::sort(run.fired_faults.begin(), run.fired_faults.end(),
              [](const FiredFault& a, const FiredFault& b) { return a.at_seconds < b.at_seconds; });
    set_root_failure(run, c.failures);
    return run;
  }

 private:
  // One case in flight: its record keys, the ranks that died, what failed, and how long the
  // launcher still waits.
  struct Case {
    const Scenario& sc;
    const RunOptions& options;
    std::chrono::seconds limit;
    int64_t k;
    std::vector<std::string> keys;
    std::vector<RankFailure> failures;
    Clock::time_point t0;
    std::vector<int> dead;
    Clock::time_point patience;  // after a death: how long its peers may take to notice
  };

  // Until every live rank has written its record, the case limit passes, or (after a death) its
  // peers had their deadline to notice.
  void await_records(Case& c, RunRecord& run) {
    const auto& options = c.options;
    const auto& sc = c.sc;
    const int64_t k = c.k;
    const auto& keys = c.keys;
    const auto t0 = c.t0;
    const auto& limit = c.limit;
    auto& dead = c.dead;
    auto& failures = c.failures;
    auto& patience = c.patience;
    for (auto pause = std::chrono::microseconds(50);; pause = std::min(pause * 2, std::chrono::microseconds(5000))) {
      std::vector<std::string> awaited;
      for (int r = 0; r < world_; ++r)
        if (std::find(dead.begin(), dead.end(), r) == dead.end()) awaited.push_back(keys[static_cast<std::size_t>(r)]);
      if (store_->check(awaited)) break;
      if (joined_ && patience == Clock::time_point::max() && store_->check({keys[0]}))
        patience = Clock::now() + options.deadline + std::chrono::seconds(2);  // its peers are not far behind
      if (const auto [rank, why] = reap_dead(); rank >= 0) {
        dead.push_back(rank);
        failures.push_back({rank, why, "process_died"});
        note_planned_abort(sc, rank, t0, run);
        // Like torchrun's agent, the launcher tells the survivors, so they fail now, naming it.
        comm::mark_rank_left(*store_, case_prefix(pool_, k), rank, why);
        // The dead rank is not waited for; its peers get their deadline to detect it, then go.
        patience = Clock::now() + options.deadline + std::chrono::seconds(2);
        continue;
      }
      if (Clock::now() > patience) break;
      if (Clock::now() - t0 > limit) {
        failures.push_back({0, "not every rank answered case " + std::to_string(k) + " within " +
                                   std::to_string(limit.count()) + " s", "deadline"});
        broken_ = true;
        break;
      }
      std::this_thread::sleep_for(pause);
    }
  }

  // Each rank's record into `run`; a rank without one is a failure when it is stuck after a death
  // or lost to a joined launch.
  void collect_records(Case& c, RunRecord& run) {
    const auto& options = c.options;
    const auto& keys = c.keys;
    const auto& dead = c.dead;
    auto& failures = c.failures;
    for (int r = 0; r < world_; ++r) {
      run.ranks[static_cast<std::size_t>(r)].rank = r;
      if (!store_->check({keys[static_cast<std::size_t>(r)]})) {
        if (std::find(dead.begin(), dead.end(), r) == dead.end() && !dead.empty()) {
          broken_ = true;  // still running: the pool goes
          failures.push_back({r, "no record: still running " + std::to_string(options.deadline.count() + 2000) +
                                     " ms after rank " + std::to_string(dead.front()) + " died",
                              "deadline"});
        } else if (joined_ && Clock::now() > c.patience) {
          broken_ = true;  // not this process's child: gone, or stuck, and either way lost to the launch
          failures.push_back({r, "no record " + std::to_string(options.deadline.count() + 2000) +
                                     " ms after rank 0's: its process is gone or stuck (an external launch's "
                                     "rank cannot be restarted from here)",
                              "process_died"});
        }
        continue;
      }
      const std::vector<uint8_t> bytes = store_->get(keys[static_cast<std::size_t>(r)]);
      store_->deleteKey(keys[static_cast<std::size_t>(r)]);
      const nlohmann::json reply = nlohmann::json::parse(bytes.begin(), bytes.end());
      run.ranks[static_cast<std::size_t>(r)] = rank_record_from_json(reply.at("record"));
      for (const auto& f : reply.at("fired")) run.fired_faults.push_back(fired_fault_from_json(f));
      if (r == 0) run.host_rss_bytes = reply.at("host_rss_bytes").get<std::vector<int64_t>>();
      if (const auto error = reply.at("error").get<std::string>(); !error.empty())
        failures.push_back({r, error, reply.at("error_kind").get<std::string>()});
    }
  }

  void spawn(const std::string& worker, const std::string& comm, int rank) {
    // Its environment: this one without torchrun's variables and ours, then this rank's.
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      const std::string name = kv.substr(0, kv.find('='));
      if (name == "RANK" || name == "WORLD_SIZE" || name == "LOCAL_RANK" || name == "MASTER_ADDR" ||
          name == "MASTER_PORT" || name == "SHARDFUZZ_POOL" || name == "SHARDFUZZ_COMM")
        continue;
      env.push_back(kv);
    }
    env.push_back("RANK=" + std::to_string(rank));
    env.push_back("LOCAL_RANK=" + std::to_string(rank));
    env.push_back("WORLD_SIZE=" + std::to_string(world_));
    env.push_back("MASTER_ADDR=127.0.0.1");
    env.push_back("MASTER_PORT=" + std::to_string(store_->getPort()));
    env.push_back("SHARDFUZZ_POOL=" + pool_);
    env.push_back("SHARDFUZZ_COMM=" + comm);
    subprocess::SpawnOptions options;
    options.who = "rank process";
    options.own_group = false;
    options.die_with_parent = true;   // a launcher that dies takes its ranks with it
    options.stdout_to_stderr = true;  // the launcher's stdout is for its own report
    subprocess::Command command{{worker, "rank-worker"}, std::move(env), /*search_path=*/false,
                                /*report_exec_failure=*/false};
    ranks_.push_back(subprocess::spawn(options, command));
  }

  // A rank process that has exited (its rank and how), or rank -1 while all live.
  std::pair<int, std::string> reap_dead() {
    for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) {
      const std::optional<int> status = ranks_[static_cast<std::size_t>(r)].try_reap();
      if (!status) continue;
      broken_ = true;
      return {r, "process died: " + exit_description(*status)};
    }
    return {-1, ""};
  }

  // A planned abort ends its rank's process before the rank can report that it fired: when the
  // plan has one for the rank that died, it is the one that fired.
  static void note_planned_abort(const Scenario& sc, int rank, Clock::time_point t0, RunRecord& run) {
    for (std::size_t i = 0; i < sc.faults.size(); ++i)
      if (sc.faults[i].is(CollectiveFault::Kind::Abort) && sc.faults[i].rank == rank) {
        run.fired_faults.push_back({static_cast<int>(i), rank, sc.faults[i].kind_name(), "", "",
                                    std::chrono::duration<double>(Clock::now() - t0).count()});
        return;
      }
  }

  int world_;
  std::string pool_;
  c10::intrusive_ptr<c10d::TCPStore> store_;
  std::vector<subprocess::Child> ranks_;  // the rank processes it started (none when joined)
  bool joined_ = false;
  std::thread rank0_;  // joined: this process's own rank
  int64_t next_case_ = 0;
  bool broken_ = false;
};

class ProcessBackend final : public Backend {
 public:
  explicit ProcessBackend(ProcessOptions options) : options_(std::move(options)) {
    if (options_.comm != "store" && options_.comm != "nccl")
      throw std::invalid_argument("--backend: '" + options_.comm + "' is not a rank-process communicator");
    if (options_.nproc < 0 || options_.nproc > 64)
      throw std::invalid_argument("--nproc: " + std::to_string(options_.nproc) + " outside 1-64");
    if (options_.comm == "nccl") {
      if (!comm::nccl_built())
        throw std::invalid_argument("--backend nccl: this build has no NCCL (configure with a CUDA LibTorch, "
                                    "docs/gpu-path.md)");
      options_.run.device = "cuda";
      options_.run.recover = false;  // an NCCL world is not recovered in place
    }
    memory::Probe::named(options_.run.device, "--device", /*warm=*/false);  // refuse a device this host lacks, now
    if (options_.join) {
      joined_ = joined_rank_env(options_.comm);
      if (joined_->rank != 0)
        throw std::invalid_argument("RANK: " + std::to_string(joined_->rank) + " serves its rank (serve_joined_rank); "
                                    "only rank 0 of a joined launch runs the command");
      options_.nproc = joined_world(*joined_, options_.nproc);
    }
  }

  std::string name() const override { return options_.comm == "nccl" ? "nccl" : "process"; }

  RunRecord run(const Scenario& sc) override {
    sc.validate();
    const memory::Probe probe = rank_probe(sc, options_.run, /*ranks_share_a_process=*/false, /*warm=*/false);
    if (options_.nproc > 0 && sc.world_size != options_.nproc)
      throw std::invalid_argument("world_size: " + std::to_string(sc.world_size) + " differs from --nproc " +
                                  std::to_string(options_.nproc));
    if (options_.comm == "nccl" && sc.world_size > memory::cuda_device_count())
      throw std::invalid_argument("world_size: " + std::to_string(sc.world_size) + " ranks need as many GPUs for NCCL, "
                                  "this host has " + std::to_string(memory::cuda_device_count()) +
                                  " (NCCL refuses two ranks on one GPU; --backend process runs them through the store)");
    if (joined_)
      for (std::size_t i = 0; i < sc.faults.size(); ++i)
        if (sc.faults[i].is(CollectiveFault::Kind::Abort))
          throw std::invalid_argument("faults[" + std::to_string(i) + "].kind: abort ends its rank's process, and under "
                                      "--join that process belongs to the launch (rank 0's runs the command; "
                                      "torchrun ends the launch when a worker dies): run it on spawned ranks (--nproc)");
    if (joined_lost_)
      throw std::runtime_error("--join: a rank of the launch stopped answering in an earlier case (" + *joined_lost_ +
                               "); its processes cannot be restarted from here: start the launch again");
    RankPool& pool = pool_for(sc.world_size);
    ReferenceInBackground reference(sc, options_.run.reference, probe.shape_only());  // trained while the ranks run
    const bool recovery = options_.run.recover && std::any_of(sc.faults.begin(), sc.faults.end(),
                                                              [](const FaultSpec& f) { return f.is_recoverable(); });
    RunRecord run = pool.run(sc, options_.run, recovery, options_.case_limit, name());
    if (pool.broken()) {
      pools_.erase(sc.world_size);
      if (joined_) joined_lost_ = run.error;
    }
    reference.wait();
    if (options_.run.reference) attach_reference(sc, run);
    return run;
  }

 private:
  ProcessOptions options_;
  // One warm pool per world size (a campaign draws several; starting rank processes, and CUDA in
  // each, costs seconds), the least recently used dropped beyond kPools.
  RankPool& pool_for(int world) {
    static constexpr std::size_t kPools = 4;
    auto it = pools_.find(world);
    if (it == pools_.end()) {
      if (pools_.size() >= kPools) {
        auto oldest = std::min_element(pools_.begin(), pools_.end(),
                                       [](const auto& a, const auto& b) { return a.second.used < b.second.used; });
        pools_.erase(oldest);
      }
      auto pool = joined_ ? std::make_unique<RankPool>(*joined_) : std::make_unique<RankPool>(options_, world);
      it = pools_.emplace(world, Pooled{std::move(pool), 0}).first;
    }
    it->second.used = ++uses_;
    return *it->second.pool;
  }

  struct Pooled {
    std::unique_ptr<RankPool> pool;
    uint64_t used = 0;
  };
  std::map<int, Pooled> pools_;
  uint64_t uses_ = 0;
  std::optional<RankEnv> joined_;  // --join: this process is rank 0 of an external launch
  std::optional<std::string> joined_lost_;  // why an earlier case lost a rank of the launch
};

}  // namespace

std::unique_ptr<Backend> make_process_backend(const ProcessOptions& options) {
  return std::make_unique<ProcessBackend>(options);
}

}  // namespace shardfuzz::harness::process
