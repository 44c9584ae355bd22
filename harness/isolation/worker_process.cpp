// The worker's protocol over two pipes: request = u64 length + bytes; reply = one status byte
// ('R' returned, 'T' threw) + u64 length + bytes. The worker's stderr is a third pipe, kept as a
// tail per call. Forking, pipes and waiting are harness/subprocess's.
#include "harness/isolation/worker_process.h"

#include "harness/subprocess/exit_status.h"
#include "harness/subprocess/io.h"
#include "harness/subprocess/resident_set.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

namespace shardfuzz::harness::isolation {
namespace {

using Clock = std::chrono::steady_clock;
inline constexpr std::size_t kStderrTail = 2000;

void serve(const WorkerProcess::Handler& handler, int in, int out) {
  for (;;) {
    uint64_t size = 0;
    if (!subprocess::read_exact(in, &size, sizeof size)) break;
    std::string request(size, '\0');
    if (!subprocess::read_exact(in, request.data(), size)) break;
    char status = 'R';
    WorkerReply reply;
    try {
      reply = handler(request);
    } catch (const std::exception& e) {
      status = 'T';
      reply = std::string(e.what());
    } catch (...) {
      status = 'T';
      reply = std::string("an exception that is not a std::exception");
    }
    std::fflush(nullptr);
    const uint64_t n = reply.text.size();
    if (!subprocess::write_all(out, &status, 1) || !subprocess::write_all(out, &n, sizeof n) ||
        !subprocess::write_all(out, reply.text.data(), n))
      break;
    if (reply.after_sent) reply.after_sent();
  }
}

enum class Waited { Ready, Closed, TimedOut, OutOfMemory };

// Waits for the worker's reply, draining its stderr into `tail` and sampling its resident set into
// `peak_rss`; kills it at a limit.
Waited wait_for_reply(subprocess::Child& child, const Limits& limits, Clock::time_point deadline, std::string& tail,
                      int64_t& peak_rss) {
  bool over = false;
  const auto within_memory = [&] {
    const int64_t rss = resident_set_bytes(child.pid());
    peak_rss = std::max(peak_rss, rss);
    over = limits.memory_bytes > 0 && rss > limits.memory_bytes;
    return !over;
  };
  switch (subprocess::wait_readable(child.from_child(), deadline, child.stderr_fd(), tail, kStderrTail, within_memory)) {
    case subprocess::Wait::Ready: return Waited::Ready;
    case subprocess::Wait::Closed: return Waited::Closed;
    case subprocess::Wait::TimedOut: child.kill(); return Waited::TimedOut;
    case subprocess::Wait::Stopped: break;
  }
  child.kill();
  return Waited::OutOfMemory;
}

// The reply of a worker that answered: its status byte and text; false for a half reply.
bool read_reply(int fd, char& status, std::string& text) {
  uint64_t size = 0;
  if (!subprocess::read_exact(fd, &status, 1) || !subprocess::read_exact(fd, &size, sizeof size)) return false;
  text.resize(size);
  return subprocess::read_exact(fd, text.data(), size);
}

// How a worker that gave no reply ended: Signalled or Exited.
void set_from_status(ChildOutcome& o, int status) {
  const auto s = subprocess::ExitStatus::from_wait(status);
  if (s.signalled()) {
    o.kind = ChildOutcome::Kind::Signalled;
    o.signal = s.signal;
  } else {
    o.kind = ChildOutcome::Kind::Exited;
    o.exit_code = s.code;
  }
}

}  // namespace

WorkerProcess::WorkerProcess(Handler handler) : handler_(std::move(handler)) {}

WorkerProcess::~WorkerProcess() = default;  // the Child kills and reaps a live worker

void WorkerProcess::start() {
  require_single_threaded("a case worker");
  subprocess::SpawnOptions options;
  options.who = "isolation";
  options.die_with_parent = true;  // a harness killed with SIGKILL leaves no worker behind
  options.to_child = options.from_child = options.stderr_pipe = true;
  child_ = subprocess::spawn(options, [this](int in, int out) { serve(handler_, in, out); });
  ++starts_;
}

ChildOutcome WorkerProcess::call(const std::string& request, const Limits& limits) {
  if (!child_.running()) start();
  const auto t0 = Clock::now();
  ChildOutcome o;
  std::string tail;
  subprocess::drain(child_.stderr_fd(), tail, kStderrTail);  // what an earlier call left
  tail.clear();
  const uint64_t n = request.size();
  const bool sent = subprocess::write_all(child_.to_child(), &n, sizeof n) &&
                    subprocess::write_all(child_.to_child(), request.data(), n);
  const Waited w = sent ? wait_for_reply(child_, limits, t0 + limits.wall, tail, o.peak_rss_bytes) : Waited::Closed;
  char status = 0;
  const bool replied = w == Waited::Ready && read_reply(child_.from_child(), status, o.output);
  subprocess::drain(child_.stderr_fd(), tail, kStderrTail);
  o.stderr_tail = tail.size() > kStderrTail ? tail.substr(tail.size() - kStderrTail) : tail;
  if (replied) {
    o.kind = status == 'T' ? ChildOutcome::Kind::Threw : ChildOutcome::Kind::Returned;
  } else {
    o.output.clear();
    if (w == Waited::Ready || w == Waited::Closed) child_.kill();  // a half reply: it is not sane
    const int status_code = child_.reap();
    if (w == Waited::TimedOut) o.kind = ChildOutcome::Kind::TimedOut;
    else if (w == Waited::OutOfMemory) o.kind = ChildOutcome::Kind::OutOfMemory;
    else set_from_status(o, status_code);
  }
  o.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return o;
}

}  // namespace shardfuzz::harness::isolation
