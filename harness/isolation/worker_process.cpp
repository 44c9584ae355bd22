// The worker's protocol over two pipes: request = u64 length + bytes; reply = one status byte
// ('R' returned, 'T' threw) + u64 length + bytes. The worker's stderr is a third pipe, kept as a
// tail per call.
#include "harness/isolation/worker_process.h"

#include "harness/isolation/process_io.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace shardfuzz::harness::isolation {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void serve(const WorkerProcess::Handler& handler, int in, int out) {
  for (;;) {
    uint64_t size = 0;
    if (!io::read_exact(in, &size, sizeof size)) break;
    std::string request(size, '\0');
    if (!io::read_exact(in, request.data(), size)) break;
    char status = 'R';
    std::string reply;
    try {
      reply = handler(request);
    } catch (const std::exception& e) {
      status = 'T';
      reply = e.what();
    } catch (...) {
      status = 'T';
      reply = "an exception that is not a std::exception";
    }
    std::fflush(nullptr);
    const uint64_t n = reply.size();
    if (!io::write_all(out, &status, 1) || !io::write_all(out, &n, sizeof n) || !io::write_all(out, reply.data(), n))
      break;
  }
  std::fflush(nullptr);
  ::_exit(0);  // no static destructors: the parent owns them
}

}  // namespace

WorkerProcess::WorkerProcess(Handler handler) : handler_(std::move(handler)) {}

WorkerProcess::~WorkerProcess() {
  if (pid_ > 0) {
    io::kill_group(pid_);
    reap();
  }
}

void WorkerProcess::start() {
  require_single_threaded("a case worker");
  ::signal(SIGPIPE, SIG_IGN);  // a dead worker is an outcome, not the end of the harness
  int req[2], rep[2], err[2];
  if (::pipe2(req, O_CLOEXEC) != 0) throw std::runtime_error(std::string("isolation: pipe: ") + std::strerror(errno));
  if (::pipe2(rep, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    ::close(req[0]);
    ::close(req[1]);
    throw std::runtime_error(std::string("isolation: pipe: ") + std::strerror(errno));
  }
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {req[0], req[1], rep[0], rep[1], err[0], err[1]}) ::close(fd);
    throw std::runtime_error(std::string("isolation: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a harness killed with SIGKILL leaves no worker behind
    ::dup2(err[1], STDERR_FILENO);
    ::close(req[1]);
    ::close(rep[0]);
    ::close(err[0]);
    serve(handler_, req[0], rep[1]);
  }
  ::setpgid(pid, pid);
  ::close(req[0]);
  ::close(rep[1]);
  ::close(err[1]);
  io::set_nonblocking(err[0]);
  pid_ = pid;
  to_ = req[1];
  from_ = rep[0];
  err_ = err[0];
  ++starts_;
}

int WorkerProcess::reap() {
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  for (int* fd : {&to_, &from_, &err_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  pid_ = -1;
  return status;
}

ChildOutcome WorkerProcess::call(const std::string& request, const Limits& limits) {
  if (pid_ <= 0) start();
  const auto t0 = Clock::now();
  ChildOutcome o;
  std::string tail;
  io::drain(err_, tail, io::kStderrTail);  // what an earlier call left
  tail.clear();
  const uint64_t n = request.size();
  const bool sent = io::write_all(to_, &n, sizeof n) && io::write_all(to_, request.data(), n);
  const io::Wait w = sent ? io::wait_readable(from_, err_, tail, pid_, limits, t0 + limits.wall, o.peak_rss_bytes)
                          : io::Wait::Closed;
  char status = 0;
  uint64_t size = 0;
  bool replied = false;
  if (w == io::Wait::Ready && io::read_exact(from_, &status, 1) && io::read_exact(from_, &size, sizeof size)) {
    o.output.resize(size);
    replied = io::read_exact(from_, o.output.data(), size);
  }
  io::drain(err_, tail, io::kStderrTail);
  o.stderr_tail = tail.size() > io::kStderrTail ? tail.substr(tail.size() - io::kStderrTail) : tail;
  if (replied) {
    o.kind = status == 'T' ? ChildOutcome::Kind::Threw : ChildOutcome::Kind::Returned;
  } else {
    o.output.clear();
    if (w == io::Wait::Ready || w == io::Wait::Closed) io::kill_group(pid_);  // a half reply: it is not sane
    const int status_code = reap();
    if (w == io::Wait::TimedOut) o.kind = ChildOutcome::Kind::TimedOut;
    else if (w == io::Wait::OutOfMemory) o.kind = ChildOutcome::Kind::OutOfMemory;
    else io::set_from_status(o, status_code);
  }
  o.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return o;
}

}  // namespace shardfuzz::harness::isolation
