// A world of rank processes, one per GPU, over NCCL: the unique id travels through the launcher's
// store (torchrun-compatible), mesh groups come from ncclCommSplit, and collectives run on the
// communicator's own stream, ordered after the caller's stream by events and before its later
// work, as FSDP2 orders its all-gather and reduce-scatter streams (docs/fsdp2-semantics.md section 12).
// The caller waits for each collective under the deadline, polling NCCL's asynchronous error: a
// deadline or an NCCL error aborts the communicator and throws CollectiveError on that rank,
// naming rank, group, op and sequence number. Before each collective the ranks exchange a hash
// of its signature, so a mismatch is reported as in ThreadWorld instead of hanging.
//
// Built only with a CUDA LibTorch and NCCL (SHARDFUZZ_NCCL); elsewhere connect_nccl_world throws
// std::invalid_argument saying so.
#pragma once

#include "runtime/comm/communicator.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace shardfuzz::comm {

struct NcclWorldOptions {
  int rank = 0;
  int world_size = 1;
  int device = 0;  // the CUDA device of this rank
  std::chrono::milliseconds deadline{3000};
  std::string prefix = "world";  // store keys of this world's unique ids
};

bool nccl_built();
std::shared_ptr<Communicator> connect_nccl_world(c10::intrusive_ptr<c10d::Store> store,
                                                 const NcclWorldOptions& options);

}  // namespace shardfuzz::comm
