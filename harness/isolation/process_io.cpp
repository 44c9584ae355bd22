// Pipes and polling for harness/isolation.
#include "harness/isolation/process_io.h"

#include "harness/subprocess/resident_set.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>

namespace shardfuzz::harness::isolation::io {

bool write_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, p + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool read_exact(int fd, void* data, std::size_t size) {
  char* p = static_cast<char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, p + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pfd{fd, POLLIN, 0};
      ::poll(&pfd, 1, -1);
      continue;
    }
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool drain(int fd, std::string& into, std::size_t keep_tail) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<std::size_t>(n));
      if (keep_tail && into.size() > 4 * keep_tail) into.erase(0, into.size() - keep_tail);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

void kill_group(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

Wait wait_readable(int fd, int stderr_fd, std::string& tail, pid_t child, const Limits& limits,
                   std::chrono::steady_clock::time_point deadline, int64_t& peak_rss) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      kill_group(child);
      return Wait::TimedOut;
    }
    pollfd fds[2] = {{fd, POLLIN, 0}, {stderr_fd, POLLIN, 0}};
    const int ready = ::poll(fds, stderr_fd >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(left, 20)));
    if (stderr_fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP))) drain(stderr_fd, tail, kStderrTail);
    const int64_t rss = resident_set_bytes(child);
    peak_rss = std::max(peak_rss, rss);
    if (limits.memory_bytes > 0 && rss > limits.memory_bytes) {
      kill_group(child);
      return Wait::OutOfMemory;
    }
    if (ready > 0 && (fds[0].revents & POLLIN)) return Wait::Ready;
    if (ready > 0 && (fds[0].revents & (POLLHUP | POLLERR))) return Wait::Closed;
  }
}

void set_from_status(ChildOutcome& o, int status) {
  if (WIFSIGNALED(status)) {
    o.kind = ChildOutcome::Kind::Signalled;
    o.signal = WTERMSIG(status);
  } else {
    o.kind = ChildOutcome::Kind::Exited;
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
}

}  // namespace shardfuzz::harness::isolation::io
