// The collective interface every world implements (ThreadWorld: ranks as threads; StoreWorld: rank
// processes over a TCPStore; NcclWorld: one process per GPU).
// A Communicator is one rank's handle on one group; FSDP code talks only to this.
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace shardfuzz::comm {

enum class ReduceOp { Sum, Avg };
const char* to_string(ReduceOp op);

// What went wrong in a collective. Every rank of the group that is inside (or later enters) the
// failed collective gets one; the message names the ranks, the op and the sequence number.
struct CollectiveError : std::runtime_error {
  // Injected: a planned fault (FaultyCommunicator), raised on the rank the plan names.
  enum class Kind { Mismatch, Deadline, Aborted, InvalidArgument, Injected };
  CollectiveError(Kind kind, std::string group, int rank, std::string op, uint64_t sequence,
                  const std::string& message)
      : std::runtime_error(message), kind(kind), group(std::move(group)), rank(rank), op(std::move(op)),
        sequence(sequence) {}
  Kind kind;
  std::string group;  // the group's name, e.g. "world", "dp", "dp_mod_ep"
  int rank;           // the global rank that raised it
  std::string op;     // e.g. "all_gather_into_tensor"
  uint64_t sequence;  // the group's collective sequence number (0-based)
};
// Deadline also covers a collective that can never complete because a member rank's thread has
// already returned without entering it: waiting out the clock would only delay the same verdict.
const char* to_string(CollectiveError::Kind kind);

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;                    // rank within this group
  virtual int size() const = 0;                    // number of ranks in this group
  virtual int global_rank() const = 0;             // rank in the world
  virtual const std::vector<int>& global_ranks() const = 0;  // the group's members, by group rank
  virtual const std::string& name() const = 0;     // "world", or the mesh dim it serves
  virtual uint64_t sequence() const = 0;           // number of collectives this rank has entered here

  // output: contiguous, numel == input.numel() * size(); rank r's input lands at [r*n, (r+1)*n).
  virtual void all_gather_into_tensor(at::Tensor& output, const at::Tensor& input) = 0;
  // input: contiguous, numel == output.numel() * size(); rank r receives the reduction of chunk r.
  virtual void reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input, ReduceOp op) = 0;
  virtual void all_reduce(at::Tensor& tensor, ReduceOp op) = 0;
  // Splits along dim 0 (in rows); empty split vectors mean equal splits.
  virtual void all_to_all_single(at::Tensor& output, const at::Tensor& input,
                                 const std::vector<int64_t>& output_split_sizes,
                                 const std::vector<int64_t>& input_split_sizes) = 0;
  virtual void broadcast(at::Tensor& tensor, int root) = 0;  // root is a group rank
  virtual void barrier() = 0;

  // Collective over this group (MPI/NCCL comm-split style): ranks passing the same color form a
  // new group, ordered by (key, rank). Returns nullptr for color < 0.
  virtual std::shared_ptr<Communicator> split(int color, int key, const std::string& name) = 0;

  // Recovery of the whole world this group belongs to, after a failure a rank can recover from
  // (torchft's report-error-then-reconfigure, within one world):
  // abort_world fails every rank's pending and later collectives, in every group, with
  // CollectiveError(Kind::Aborted) naming this rank and `reason` (the first reason wins);
  // recover_world is the rendezvous after it: it blocks until every rank of the world has called
  // it, then every group forgets its unfinished collectives, sequence numbers restart at 0 and
  // collectives work again. Returns the world's recovery count (1 after the first). Throws
  // CollectiveError naming the ranks that did not come: Kind::Aborted when one left for good (its
  // thread or process is gone, or it failed with an error nobody recovers from), Kind::Deadline
  // when one did not arrive within the deadline.
  virtual void abort_world(const std::string& reason) = 0;
  virtual int recover_world() = 0;

  // Not a collective: this rank stays away for `duration` on its world's clock (a straggler's or
  // a hang's pause). A scheduled ThreadWorld lets the other ranks run meanwhile and costs no wall
  // time; every other world sleeps.
  virtual void pause(std::chrono::milliseconds duration);
};

}  // namespace shardfuzz::comm
