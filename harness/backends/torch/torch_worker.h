// The harness's end of the persistent torch worker (harness/backends/torch/worker.py): one child
// process, JSON lines over its stdin and stdout, its stderr in a log file. Started on the first
// request and again after it died or missed a deadline; killed with its rank processes (its own
// process group) on destruction.
#pragma once

#include "harness/subprocess/child.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <stdexcept>
#include <string>

namespace shardfuzz::harness::torch_backend {

// The worker gave no answer in time, or died: `what()` says which, with the log's last lines.
struct WorkerFailure : std::runtime_error {
  WorkerFailure(std::string kind, const std::string& message) : std::runtime_error(message), kind(std::move(kind)) {}
  std::string kind;  // "deadline" or "crash"
};

class TorchWorker {
 public:
  // `python`: the interpreter that imports torch; `script`: worker.py; `log`: its stderr.
  TorchWorker(std::string python, std::string script, std::string log);
  ~TorchWorker();
  TorchWorker(const TorchWorker&) = delete;
  TorchWorker& operator=(const TorchWorker&) = delete;

  // Sends `request` (one line) and returns the reply line parsed. Throws WorkerFailure when no
  // reply comes within `timeout` (the worker is killed; the next request starts a new one) or the
  // worker exits.
  nlohmann::json request(const nlohmann::json& request, std::chrono::milliseconds timeout);

  bool running() const { return child_.running(); }
  // The last `lines` lines of the worker's log (its stderr and the ranks').
  std::string log_tail(int lines = 12) const;

 private:
  void start();
  // Waits up to `grace` for the worker to exit on its own, then kills its process group; says how
  // it ended.
  std::string stop(std::chrono::milliseconds grace = std::chrono::milliseconds(0));
  // stop()s it and throws WorkerFailure("crash") naming how it ended.
  [[noreturn]] void crashed(std::chrono::milliseconds grace);

  std::string python_, script_, log_;
  subprocess::Child child_;
  std::string pending_;  // bytes read past the last reply line
};

}  // namespace shardfuzz::harness::torch_backend
