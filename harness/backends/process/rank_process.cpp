// The rank process's loop: wait for a case, run this rank, write the record back.
#include "harness/backends/process/rank_process.h"

#include "harness/backends/rank_run.h"
#include "harness/run/run_record_json.h"
#include "harness/scenario/scenario_json.h"
#include "runtime/comm/blas_threads.h"
#include "runtime/comm/nccl_world.h"
#include "runtime/comm/store_world.h"
#include "runtime/compat/torch_compat.h"
#include "runtime/memory/device_memory.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

namespace shardfuzz::harness::process {
namespace {

std::string text_of(const std::vector<uint8_t>& b) { return std::string(b.begin(), b.end()); }
std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// "cuda" places each rank process on GPU local_rank modulo the GPUs it sees (one GPU: all on it).
RunOptions on_this_ranks_device(RunOptions options, const RankEnv& env) {
  if (options.device == "cuda" && memory::cuda_device_count() > 0)
    options.device = "cuda:" + std::to_string(env.local_rank % memory::cuda_device_count());
  return options;
}

// Waits for case k; false when the launcher said stop or is gone (`launcher_gone`).
bool wait_for_case(c10d::Store& store, const RankEnv& env, int64_t k, const std::function<bool()>& launcher_gone) {
  const std::vector<std::string> keys{case_key(env.pool, k)};
  const std::vector<std::string> stop{stop_key(env.pool)};
  for (auto pause = std::chrono::microseconds(50);; pause = std::min(pause * 2, std::chrono::microseconds(5000))) {
    if (store.check(keys)) return true;
    if (store.check(stop) || launcher_gone()) return false;
    std::this_thread::sleep_for(pause);
  }
}

// The case's start on this process's steady clock: the launcher's wall-clock start, so that every
// rank's times (faults fired, errors caught, recoveries) share one origin, as in ThreadWorld.
std::chrono::steady_clock::time_point case_start(const nlohmann::json& job) {
  const auto now_wall = std::chrono::system_clock::now().time_since_epoch();
  const auto since = now_wall - std::chrono::nanoseconds(job.at("start_ns").get<int64_t>());
  return std::chrono::steady_clock::now() - std::chrono::duration_cast<std::chrono::steady_clock::duration>(since);
}

nlohmann::json run_case(const c10::intrusive_ptr<c10d::Store>& store, const RankEnv& env, int64_t k, const nlohmann::json& job) {
  const auto t0 = case_start(job);
  nlohmann::json reply = {{"error", ""}, {"error_kind", ""}};
  RunRecord run;
  run.ranks.resize(static_cast<std::size_t>(env.world_size));
  run.ranks[static_cast<std::size_t>(env.rank)].rank = env.rank;
  std::shared_ptr<comm::Communicator> world;
  try {
    const Scenario sc = scenario_from_json(job.at("scenario"));
    const uint64_t hash = scenario_hash(to_json_text(sc));
    if (hash != job.at("hash").get<uint64_t>())
      throw std::runtime_error("scenario hash " + std::to_string(hash) + " differs from the launcher's " +
                               std::to_string(job.at("hash").get<uint64_t>()));
    if (sc.world_size != env.world_size)
      throw std::invalid_argument("world_size: the scenario has " + std::to_string(sc.world_size) +
                                  " ranks but this pool has " + std::to_string(env.world_size));
    const RunOptions options = on_this_ranks_device(run_options_from_json(job.at("options")), env);
    const memory::Probe probe = rank_probe(sc, options, /*ranks_share_a_process=*/false);
    run.recovery = job.at("recovery").get<bool>();
    std::mutex mu;
    if (env.comm == "nccl")
      world = comm::connect_nccl_world(store,
                                       {env.rank, env.world_size, probe.device().index(), options.deadline,
                                        case_prefix(env.pool, k)});
    else
      world = comm::connect_store_world(store,
                                        {env.rank, env.world_size, options.deadline, case_prefix(env.pool, k)});
    // Every rank checks that its peers run the same scenario before any of them builds a model.
    const auto on_device = at::TensorOptions().dtype(at::kLong).device(probe.device());
    at::Tensor hashes = at::empty({env.world_size}, on_device);
    at::Tensor mine = at::full({1}, static_cast<int64_t>(hash), on_device);
    world->all_gather_into_tensor(hashes, mine);
    hashes = hashes.cpu();
    for (int r = 0; r < env.world_size; ++r)
      if (hashes[r].item<int64_t>() != static_cast<int64_t>(hash))
        throw std::runtime_error("rank " + std::to_string(r) + " runs a scenario whose hash differs from this rank's");
    const RankRunShared shared{sc, options, probe, run, mu, t0};
    run_rank(shared, world);
  } catch (...) {
    const auto error = std::current_exception();
    std::string message;
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      message = compat::without_backtrace(e.what());
    } catch (...) {
      message = "unknown exception";
    }
    reply["error"] = message;
    reply["error_kind"] = error_kind(error);
    if (world) {
      try {  // peers stop waiting for this rank now
        if (env.comm == "store")
          comm::leave_store_world(*world, message);
        else
          world->abort_world(message);
      } catch (const std::exception&) {
      }
    }
  }
  reply["record"] = to_json(run.ranks[static_cast<std::size_t>(env.rank)]);
  reply["fired"] = nlohmann::json::array();
  for (const auto& f : run.fired_faults) reply["fired"].push_back(to_json(f));
  reply["host_rss_bytes"] = run.host_rss_bytes;
  reply["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return reply;
}

}  // namespace

int serve_cases(const c10::intrusive_ptr<c10d::Store>& store, const RankEnv& env,
                const std::function<bool()>& launcher_gone) {
  comm::one_intra_op_thread_per_process();  // one process per rank, as under torchrun
  for (int64_t k = 0;; ++k) {
    if (!wait_for_case(*store, env, k, launcher_gone)) {
      try {
        store->set(stopped_key(env.pool, env.rank), bytes_of("1"));
      } catch (const std::exception&) {  // a launcher that is gone has no store to tell
      }
      return 0;
    }
    const nlohmann::json job = nlohmann::json::parse(text_of(store->get(case_key(env.pool, k))));
    // On a thread of its own, as in ThreadWorld: what LibTorch keeps per thread (autograd's ready
    // queues, caches) goes with it, instead of being freed during the next case and counted there.
    nlohmann::json reply;
    std::thread rank_thread([&] {
      at::init_num_threads();  // the process's one intra-op thread, not OpenMP's and MKL's default team
      reply = run_case(store, env, k, job);
    });
    rank_thread.join();
    store->set(record_key(env.pool, k, env.rank), bytes_of(reply.dump()));
  }
}

int serve_rank(const RankEnv& env) {
  const pid_t launcher = getppid();
  return serve_cases(connect_rank_store(env), env, [launcher] { return getppid() != launcher; });
}

int serve_joined_rank(const RankEnv& env) {
  // Rank 0 (the store's server, or a client of torchrun's agent store) may be on another node:
  // its stop key ends the loop; a store that goes away with it throws out of it.
  return serve_cases(connect_rank_store(env), env, [] { return false; });
}

}  // namespace shardfuzz::harness::process
