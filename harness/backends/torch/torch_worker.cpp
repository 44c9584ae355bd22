// The torch worker's lifecycle and its line protocol, on harness/subprocess.
#include "harness/backends/torch/torch_worker.h"

#include "harness/subprocess/exit_status.h"
#include "harness/subprocess/io.h"

#include <deque>
#include <fstream>

namespace shardfuzz::harness::torch_backend {

TorchWorker::TorchWorker(std::string python, std::string script, std::string log)
    : python_(std::move(python)), script_(std::move(script)), log_(std::move(log)) {}

TorchWorker::~TorchWorker() {
  if (child_.running() && child_.to_child() >= 0) {
    (void)subprocess::write_all(child_.to_child(), "{\"op\":\"quit\"}\n");
    child_.close_to_child();
  }
  stop(std::chrono::seconds(5));
}

void TorchWorker::start() {
  subprocess::SpawnOptions options;
  options.who = "torch worker";
  options.own_group = true;  // killing it takes the rank processes along
  options.to_child = options.from_child = true;
  options.stderr_file = log_;
  subprocess::Command command;
  command.argv = {python_, "-u", script_};
  child_ = subprocess::spawn(options, command);
  pending_.clear();
}

std::string TorchWorker::stop(std::chrono::milliseconds grace) {
  child_.close_pipes();
  if (!child_.running()) return "was not running";
  const std::optional<int> status = child_.wait_exit(grace);
  child_.kill();  // the rank processes too
  if (!status) {
    child_.reap();
    return "was killed";
  }
  const auto how = subprocess::ExitStatus::from_wait(*status);
  if (how.signalled()) return "died of signal " + std::to_string(how.signal);
  return how.code >= 0 ? "exited with code " + std::to_string(how.code) : "stopped";
}

void TorchWorker::crashed(std::chrono::milliseconds grace) {
  const std::string how = stop(grace);
  throw WorkerFailure("crash", "torch worker (" + python_ + " " + script_ + ") " + how + "; its log:" + log_tail());
}

std::string TorchWorker::log_tail(int lines) const {
  std::ifstream in(log_);
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(line);
    if (static_cast<int>(tail.size()) > lines) tail.pop_front();
  }
  std::string out;
  for (const auto& l : tail) out += "\n    " + l;
  return out;
}

nlohmann::json TorchWorker::request(const nlohmann::json& request, std::chrono::milliseconds timeout) {
  if (!child_.running()) start();
  if (!subprocess::write_all(child_.to_child(), request.dump() + "\n")) crashed(std::chrono::milliseconds(0));
  std::string reply;
  switch (subprocess::read_line(child_.from_child(), pending_, subprocess::Clock::now() + timeout, reply, "torch worker")) {
    case subprocess::LineRead::Line: break;
    case subprocess::LineRead::TimedOut:
      stop();
      throw WorkerFailure("deadline", "torch worker gave no answer within " + std::to_string(timeout.count() / 1000) +
                                          " s (killed with its rank processes); its log:" + log_tail());
    case subprocess::LineRead::Closed: crashed(std::chrono::seconds(2));  // its stdout closed: it is on its way out
  }
  try {
    return nlohmann::json::parse(reply);
  } catch (const std::exception& e) {
    stop();
    throw WorkerFailure("crash", "torch worker answered something that is not JSON (" + std::string(e.what()) +
                                     "): " + reply.substr(0, 200));
  }
}

}  // namespace shardfuzz::harness::torch_backend
