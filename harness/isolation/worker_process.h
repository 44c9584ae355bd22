// A persistent isolated worker (AFL's persistent mode, libFuzzer's -fork): a forked child that
// serves requests one at a time, so LibTorch's start-up is paid once per worker, not once per
// case. Each call has its own wall-clock and memory limit; a worker that dies, hangs or passes
// its memory limit is killed, that call's outcome says how, and the next call starts a fresh one.
// The handler runs only in the child, on the parent's state as it was at the fork.
#pragma once

#include "harness/isolation/child_outcome.h"
#include "harness/subprocess/child.h"

#include <functional>
#include <string>

namespace shardfuzz::harness::isolation {

// What the handler answers: the reply's text, and work left for after it is sent (freeing a
// case's run record), which the parent no longer waits for: it is already reading the reply.
struct WorkerReply {
  WorkerReply(std::string text = "", std::function<void()> after_sent = nullptr)  // NOLINT: a text is a reply
      : text(std::move(text)), after_sent(std::move(after_sent)) {}
  std::string text;
  std::function<void()> after_sent;
};

class WorkerProcess {
 public:
  using Handler = std::function<WorkerReply(const std::string& request)>;
  explicit WorkerProcess(Handler handler);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Sends `request` (starting a worker when none is alive) and waits for the reply within
  // `limits`. Throws std::runtime_error when fork or pipe fail, std::logic_error when this process
  // is multi-threaded (harness/isolation/child_outcome.h).
  ChildOutcome call(const std::string& request, const Limits& limits);
  int starts() const { return starts_; }  // workers started so far (1 + restarts)
  bool alive() const { return child_.running(); }
  pid_t pid() const { return child_.running() ? child_.pid() : 0; }  // 0 when none is alive
  // Starts a worker when none is alive (what call() does first), so a caller can fork it while it
  // is still single-threaded.
  void ensure_started() {
    if (!child_.running()) start();
  }

 private:
  void start();

  Handler handler_;
  subprocess::Child child_;  // its pipes: requests to it, replies from it, its stderr
  int starts_ = 0;
};

}  // namespace shardfuzz::harness::isolation
