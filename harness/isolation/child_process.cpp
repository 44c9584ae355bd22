// One-shot isolation: a worker that serves a single call.
#include "harness/isolation/child_process.h"

#include "harness/isolation/worker_process.h"

namespace shardfuzz::harness::isolation {

ChildOutcome run_in_child(const std::function<std::string()>& work, const Limits& limits) {
  WorkerProcess worker([&work](const std::string&) { return work(); });
  return worker.call("", limits);
}

}  // namespace shardfuzz::harness::isolation
