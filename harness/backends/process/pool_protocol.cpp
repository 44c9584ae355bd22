// Keys, environment and options of the rank-process pool.
#include "harness/backends/process/pool_protocol.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdlib>
#include <stdexcept>

namespace shardfuzz::harness::process {
namespace {

std::string env_text(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  if (v && *v) return v;
  if (fallback) return fallback;
  throw std::invalid_argument(std::string(name) + ": not set (a rank process needs torchrun's RANK, WORLD_SIZE, "
                                                   "MASTER_ADDR and MASTER_PORT)");
}

int env_int(const char* name, const char* fallback, int lo, int hi) {
  const std::string text = env_text(name, fallback);
  try {
    std::size_t used = 0;
    const int v = std::stoi(text, &used);
    if (used == text.size() && v >= lo && v <= hi) return v;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(std::string(name) + ": '" + text + "' is not an integer in " + std::to_string(lo) + "-" +
                              std::to_string(hi));
}

}  // namespace

RankEnv rank_env_from_environment() {
  RankEnv e;
  e.world_size = env_int("WORLD_SIZE", nullptr, 1, 4096);
  e.rank = env_int("RANK", nullptr, 0, e.world_size - 1);
  e.local_rank = env_int("LOCAL_RANK", "0", 0, 4095);
  e.master_addr = env_text("MASTER_ADDR", nullptr);
  e.master_port = env_int("MASTER_PORT", nullptr, 1, 65535);
  e.pool = env_text("SHARDFUZZ_POOL", "shardfuzz");
  e.comm = env_text("SHARDFUZZ_COMM", "store");
  if (e.comm != "store" && e.comm != "nccl")
    throw std::invalid_argument("SHARDFUZZ_COMM: '" + e.comm + "' is not a rank-process communicator (store, nccl)");
  return e;
}

RankEnv joined_rank_env(const std::string& comm) {
  RankEnv e = rank_env_from_environment();
  e.comm = comm;
  e.pool = "shardfuzz-join-" + env_text("TORCHELASTIC_RUN_ID", "none") + "-" +
           env_text("TORCHELASTIC_RESTART_COUNT", "0");
  return e;
}

int joined_world(const RankEnv& env, int nproc) {
  if (nproc != 0 && nproc != env.world_size)
    throw std::invalid_argument("--nproc: " + std::to_string(nproc) + " differs from the launch's WORLD_SIZE " +
                                std::to_string(env.world_size));
  return env.world_size;
}

bool launch_has_agent_store() {
  const char* v = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  return v && std::string(v) == "True";
}

c10::intrusive_ptr<c10d::TCPStore> tcp_store(const std::string& addr, int port, bool serve) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(port);
  options.isServer = serve;
  options.waitWorkers = false;
  options.timeout = std::chrono::seconds(60);
  return c10::make_intrusive<c10d::TCPStore>(addr, options);
}

c10::intrusive_ptr<c10d::TCPStore> connect_rank_store(const RankEnv& env, bool serve) {
  try {
    return tcp_store(env.master_addr, env.master_port, serve);
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(env.rank) + ": cannot " + (serve ? "serve" : "reach") +
                             " the store at MASTER_ADDR:MASTER_PORT = " + env.master_addr + ":" +
                             std::to_string(env.master_port) + ": " + e.what());
  }
}

std::string case_key(const std::string& pool, int64_t k) { return pool + "/case/" + std::to_string(k); }
std::string case_prefix(const std::string& pool, int64_t k) { return pool + "/c" + std::to_string(k); }
std::string record_key(const std::string& pool, int64_t k, int rank) {
  return case_prefix(pool, k) + "/record/" + std::to_string(rank);
}
std::string stop_key(const std::string& pool) { return pool + "/stop"; }
std::string stopped_key(const std::string& pool, int rank) { return pool + "/stopped/" + std::to_string(rank); }

nlohmann::json to_json(const RunOptions& o) {
  return {{"deadline_ms", o.deadline.count()}, {"optimizer_step", o.optimizer_step},
          {"record_timeline", o.record_timeline}, {"recover", o.recover},
          {"device", o.device}};
}

RunOptions run_options_from_json(const nlohmann::json& j) {
  RunOptions o;
  o.deadline = std::chrono::milliseconds(j.at("deadline_ms").get<int64_t>());
  o.optimizer_step = j.at("optimizer_step").get<bool>();
  o.record_timeline = j.at("record_timeline").get<bool>();
  o.recover = j.at("recover").get<bool>();
  o.device = j.at("device").get<std::string>();
  return o;
}

uint64_t scenario_hash(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace shardfuzz::harness::process
