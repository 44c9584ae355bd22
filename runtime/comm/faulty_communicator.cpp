// The planned faults, applied before the collective they name.
#include "runtime/comm/faulty_communicator.h"

#include <cstdio>
#include <cstdlib>

namespace shardfuzz::comm {

const char* to_string(CollectiveFault::Action action) {
  switch (action) {
    case CollectiveFault::Action::Delay: return "delay";
    case CollectiveFault::Action::Error: return "error";
    case CollectiveFault::Action::Hang: return "hang";
    case CollectiveFault::Action::Crash: return "crash";
    case CollectiveFault::Action::Abort: return "abort";
  }
  return "unknown";
}

FaultyCommunicator::FaultyCommunicator(std::shared_ptr<Communicator> inner, std::vector<CollectiveFault> faults,
                                       std::shared_ptr<std::atomic<uint64_t>> counter, FaultObserver observer)
    : inner_(std::move(inner)), faults_(std::move(faults)), counter_(std::move(counter)), observer_(std::move(observer)) {}

std::shared_ptr<Communicator> FaultyCommunicator::wrap(std::shared_ptr<Communicator> inner,
                                                       std::vector<CollectiveFault> faults, FaultObserver observer) {
  return std::make_shared<FaultyCommunicator>(std::move(inner), std::move(faults),
                                              std::make_shared<std::atomic<uint64_t>>(0), std::move(observer));
}

void FaultyCommunicator::before(const char* op) {
  const uint64_t k = (*counter_)++;
  for (const CollectiveFault& f : faults_) {
    if (f.collective != k) continue;
    if (observer_) observer_(f, inner_->name(), op);
    const std::string where = "rank " + std::to_string(global_rank()) + ", collective " + std::to_string(k) + " (" +
                              op + " #" + std::to_string(inner_->sequence()) + " on group " + inner_->name() + ")";
    switch (f.action) {
      case CollectiveFault::Action::Delay:
        inner_->pause(f.delay);
        break;
      case CollectiveFault::Action::Error:
        throw CollectiveError(CollectiveError::Kind::Injected, inner_->name(), global_rank(), op, inner_->sequence(),
                              "injected collective error at " + where);
      case CollectiveFault::Action::Hang:
        inner_->pause(f.delay);  // away past the peers' deadline; then aborted with them
        break;
      case CollectiveFault::Action::Crash:
        throw RankCrash("injected crash: rank " + std::to_string(global_rank()) + " died before collective " +
                        std::to_string(k) + " (" + op + " #" + std::to_string(inner_->sequence()) + " on group " +
                        inner_->name() + ")");
      case CollectiveFault::Action::Abort:
        std::fprintf(stderr, "injected abort: rank %d aborts its process before %s\n", global_rank(), where.c_str());
        std::fflush(stderr);
        std::abort();
    }
  }
}

void FaultyCommunicator::all_gather_into_tensor(at::Tensor& output, const at::Tensor& input) {
  before("all_gather_into_tensor");
  inner_->all_gather_into_tensor(output, input);
}

void FaultyCommunicator::reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input, ReduceOp op) {
  before("reduce_scatter_tensor");
  inner_->reduce_scatter_tensor(output, input, op);
}

void FaultyCommunicator::all_reduce(at::Tensor& tensor, ReduceOp op) {
  before("all_reduce");
  inner_->all_reduce(tensor, op);
}

void FaultyCommunicator::all_to_all_single(at::Tensor& output, const at::Tensor& input,
                                           const std::vector<int64_t>& output_split_sizes,
                                           const std::vector<int64_t>& input_split_sizes) {
  before("all_to_all_single");
  inner_->all_to_all_single(output, input, output_split_sizes, input_split_sizes);
}

void FaultyCommunicator::broadcast(at::Tensor& tensor, int root) {
  before("broadcast");
  inner_->broadcast(tensor, root);
}

void FaultyCommunicator::barrier() {
  before("barrier");
  inner_->barrier();
}

std::shared_ptr<Communicator> FaultyCommunicator::split(int color, int key, const std::string& name) {
  // Splitting is a collective too, but not one FSDP's schedule names: it is not counted.
  std::shared_ptr<Communicator> child = inner_->split(color, key, name);
  if (!child) return child;
  return std::make_shared<FaultyCommunicator>(std::move(child), faults_, counter_, observer_);
}

}  // namespace shardfuzz::comm
