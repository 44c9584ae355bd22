// One rank's Communicator over a ThreadWorld group: validates arguments, publishes buffers to the
// group's rendezvous and copies peers' data straight out of their memory. Internal to comm/.
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/comm/group_state.h"

#include <atomic>
#include <exception>
#include <string>
#include <memory>

namespace shardfuzz::comm::detail {

// What a rank's local part of a collective (copying out of its peers' buffers) ended with.
struct Computed {
  std::string error;                         // empty: it succeeded
  std::exception_ptr allocation_failure;     // set when it failed to allocate (an OOM)
};

// Used by one thread at a time (its rank's), like a NCCL communicator on one stream.
class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<GroupState> group, int rank) : group_(std::move(group)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  int global_rank() const override { return group_->global_ranks()[rank_]; }
  const std::vector<int>& global_ranks() const override { return group_->global_ranks(); }
  const std::string& name() const override { return group_->name(); }
  uint64_t sequence() const override { return group_->world().epoch() == epoch_ ? sequence_.load() : 0; }

  void all_gather_into_tensor(at::Tensor& output, const at::Tensor& input) override;
  void reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input, ReduceOp op) override;
  void all_reduce(at::Tensor& tensor, ReduceOp op) override;
  void all_to_all_single(at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& output_split_sizes,
                         const std::vector<int64_t>& input_split_sizes) override;
  void broadcast(at::Tensor& tensor, int root) override;
  void barrier() override;
  std::shared_ptr<Communicator> split(int color, int key, const std::string& name) override;
  void abort_world(const std::string& reason) override;
  int recover_world() override;
  void pause(std::chrono::milliseconds duration) override;

 private:
  // The sequence number of the collective this rank enters now (from 0 again after a recovery).
  uint64_t next_sequence();
  // Waits for every rank's local part (GroupState::finish), then throws what failed.
  void complete(uint64_t seq, Round& round, const Computed& computed);

  const std::shared_ptr<GroupState> group_;
  const int rank_;
  std::atomic<uint64_t> sequence_{0};
  int epoch_ = 0;  // the world's recovery count when sequence_ last restarted
};

}  // namespace shardfuzz::comm::detail
