// Fault injection at the collective boundary: a Communicator that forwards to another and, at the
// rank's k-th collective (counted over every group of the rank, splits included), applies a
// planned fault before entering it:
//   delay  — a straggler: sleep, then enter (a delay under the deadline must cost nothing else);
//   error  — the collective fails on this rank (CollectiveError::Kind::Injected naming rank, group,
//            op and sequence); its peers are aborted by the world;
//   hang   — the rank does not enter: it sleeps past the deadline, so its peers' deadline fires
//            first, then enters (and is aborted with them);
//   crash  — the rank's thread dies (RankCrash) without entering;
//   abort  — the rank aborts its whole process (std::abort, SIGABRT): a process crash.
// The runtime knows nothing of scenarios: the harness turns a Scenario's fault plan into these.
#pragma once

#include "runtime/comm/communicator.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

namespace shardfuzz::comm {

struct CollectiveFault {
  enum class Action { Delay, Error, Hang, Crash, Abort };
  Action action = Action::Error;
  uint64_t collective = 0;  // the rank's collective index (0-based) over all its groups
  std::chrono::milliseconds delay{0};  // Delay: how long; Hang: how long the rank stays away
};
const char* to_string(CollectiveFault::Action action);

// A rank thread dying mid-step (the threads backend's form of a process crash).
struct RankCrash : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Called when a fault fires (for detection latency), with the fault and the op it hit.
using FaultObserver = std::function<void(const CollectiveFault&, const std::string& group, const std::string& op)>;

class FaultyCommunicator : public Communicator {
 public:
  // `faults`: this rank's plan; `counter`: the rank's collective count, shared by its groups.
  FaultyCommunicator(std::shared_ptr<Communicator> inner, std::vector<CollectiveFault> faults,
                     std::shared_ptr<std::atomic<uint64_t>> counter, FaultObserver observer = {});
  // Wraps `inner` with a fresh counter.
  static std::shared_ptr<Communicator> wrap(std::shared_ptr<Communicator> inner, std::vector<CollectiveFault> faults,
                                            FaultObserver observer = {});

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  int global_rank() const override { return inner_->global_rank(); }
  const std::vector<int>& global_ranks() const override { return inner_->global_ranks(); }
  const std::string& name() const override { return inner_->name(); }
  uint64_t sequence() const override { return inner_->sequence(); }

  void all_gather_into_tensor(at::Tensor& output, const at::Tensor& input) override;
  void reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input, ReduceOp op) override;
  void all_reduce(at::Tensor& tensor, ReduceOp op) override;
  void all_to_all_single(at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& output_split_sizes,
                         const std::vector<int64_t>& input_split_sizes) override;
  void broadcast(at::Tensor& tensor, int root) override;
  void barrier() override;
  std::shared_ptr<Communicator> split(int color, int key, const std::string& name) override;
  // Not collectives: never counted, never faulted.
  void abort_world(const std::string& reason) override { inner_->abort_world(reason); }
  int recover_world() override { return inner_->recover_world(); }
  void pause(std::chrono::milliseconds duration) override { inner_->pause(duration); }

 private:
  void before(const char* op);  // counts the collective and applies its fault, if any

  std::shared_ptr<Communicator> inner_;
  std::vector<CollectiveFault> faults_;
  std::shared_ptr<std::atomic<uint64_t>> counter_;
  FaultObserver observer_;
};

}  // namespace shardfuzz::comm
