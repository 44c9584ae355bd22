// A world of rank processes over a key-value store (LibTorch's c10d TCPStore, the store torchrun
// and srun launches rendezvous through). Every collective goes through the store: each rank sets
// its buffer (copied to the host) under the collective's key, reads its peers' and computes its
// own result in rank order, as ThreadWorld does, so results are bitwise the same as the threads
// backend's. Slow for big tensors, but it runs anywhere — several rank processes on one CPU or on
// one GPU, where NCCL refuses two ranks on a device — and it is what CI tests the rank-process
// machinery with. Deadlines, mismatches, invalid arguments, abort_world and recover_world behave
// as in ThreadWorld, naming rank, group, op and sequence number.
#pragma once

#include "runtime/comm/communicator.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace shardfuzz::comm {

struct StoreWorldOptions {
  int rank = 0;
  int world_size = 1;
  std::chrono::milliseconds deadline{3000};  // per collective
  std::string prefix = "world";  // key namespace: one per run, so runs sharing a store never meet
};

// This process's handle on the world group ("world"); split() makes the mesh groups.
std::shared_ptr<Communicator> connect_store_world(c10::intrusive_ptr<c10d::Store> store,
                                                  const StoreWorldOptions& options);

// This rank leaves for good (its run failed with an error nobody recovers from, as a ThreadWorld
// rank whose function threw): its peers' pending and later collectives fail now, and their
// recover_world fails naming it, instead of waiting out the deadline. `world` must come from
// connect_store_world (std::invalid_argument otherwise).
void leave_store_world(Communicator& world, const std::string& reason);

// The same, said by someone else for `rank` (the launcher, when a rank's process died): every
// member of the world under `prefix` fails now, naming the rank and the reason.
void mark_rank_left(c10d::Store& store, const std::string& prefix, int rank, const std::string& reason);

}  // namespace shardfuzz::comm
