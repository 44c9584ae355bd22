// How the process backend's launcher and its rank processes talk, through the TCPStore the
// launcher serves: the environment a rank process starts with, and the keys of each case.
//
//   <pool>/case/<k>            the launcher: {"scenario": <scenario JSON>, "hash": ..., "options": ...}
//   <pool>/c<k>/...            the ranks' collectives (StoreWorld prefix) or NCCL's unique id
//   <pool>/c<k>/record/<rank>  each rank: {"record": RankRecord, "fired": [...], "error": ..., ...}
//   <pool>/stop                the launcher: every rank process exits
//   <pool>/stopped/<rank>      each rank, as it exits
#pragma once

#include "harness/backends/run_options.h"

#include <c10/util/intrusive_ptr.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace c10d {
class TCPStore;
}

namespace shardfuzz::harness::process {

// torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) and ours
// (SHARDFUZZ_POOL: the key namespace; SHARDFUZZ_COMM: "store" or "nccl").
struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string pool = "shardfuzz";
  std::string comm = "store";
};
// From the environment; std::invalid_argument naming the variable that is missing or malformed.
RankEnv rank_env_from_environment();

// An external launch (`--join`: torchrun, srun or a script start every process with the same
// shardfuzz command and torchrun's variables): this process's rank, with `comm` ("store" or
// "nccl") and a pool namespace of the launch's own (TORCHELASTIC_RUN_ID and restart count, so a
// restarted launch never reads its predecessor's keys). std::invalid_argument names the variable.
RankEnv joined_rank_env(const std::string& comm);
// The launch's world: WORLD_SIZE, which `nproc` (0: not given) must agree with
// (std::invalid_argument naming --nproc otherwise).
int joined_world(const RankEnv& env, int nproc);

// The store of a rank process: a client of the launcher's store at MASTER_ADDR:MASTER_PORT. In an
// external launch the store is torchrun's agent store when torchrun says so
// (TORCHELASTIC_USE_AGENT_STORE=True: every rank a client); otherwise rank 0 serves it there
// (`serve`), as srun and hand-made launches expect.
c10::intrusive_ptr<c10d::TCPStore> connect_rank_store(const RankEnv& env, bool serve = false);
// The TCPStore every pool talks through: served here (port 0: the kernel picks one) or reached.
c10::intrusive_ptr<c10d::TCPStore> tcp_store(const std::string& addr, int port, bool serve);
bool launch_has_agent_store();

std::string case_key(const std::string& pool, int64_t k);
std::string case_prefix(const std::string& pool, int64_t k);
std::string record_key(const std::string& pool, int64_t k, int rank);
std::string stop_key(const std::string& pool);
// Set by each rank as it stops: rank 0 of a joined launch serves the store and waits for them
// before it exits, so no rank meets a store that went away mid-request.
std::string stopped_key(const std::string& pool, int rank);

nlohmann::json to_json(const RunOptions& options);
RunOptions run_options_from_json(const nlohmann::json& json);

// FNV-1a of the scenario's canonical JSON text: every rank checks that it parsed what the
// launcher (or rank 0) generated.
uint64_t scenario_hash(const std::string& canonical_text);

}  // namespace shardfuzz::harness::process
