// Names for the Communicator interface's enums, used in error messages and traces.
#include "runtime/comm/communicator.h"

#include <thread>

namespace shardfuzz::comm {

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Avg: return "avg";
  }
  return "unknown";
}

const char* to_string(CollectiveError::Kind kind) {
  switch (kind) {
    case CollectiveError::Kind::Mismatch: return "mismatch";
    case CollectiveError::Kind::Deadline: return "deadline";
    case CollectiveError::Kind::Aborted: return "aborted";
    case CollectiveError::Kind::InvalidArgument: return "invalid_argument";
    case CollectiveError::Kind::Injected: return "injected";
  }
  return "unknown";
}

void Communicator::pause(std::chrono::milliseconds duration) { std::this_thread::sleep_for(duration); }

}  // namespace shardfuzz::comm
