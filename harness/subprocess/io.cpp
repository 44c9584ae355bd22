// Pipe reads and writes, retried on EINTR, polled where they must not block.
#include "harness/subprocess/io.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace shardfuzz::harness::subprocess {

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

bool write_all(int fd, const std::string& text) { return write_all(fd, text.data(), text.size()); }

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

Wait wait_readable(int fd, Clock::time_point deadline, int err_fd, std::string& err_tail, std::size_t keep_tail,
                   const std::function<bool()>& keep_waiting) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return Wait::TimedOut;
    pollfd fds[2] = {{fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    const int ready = ::poll(fds, err_fd >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(left, 20)));
    if (err_fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP))) drain(err_fd, err_tail, keep_tail);
    if (keep_waiting && !keep_waiting()) return Wait::Stopped;
    if (ready > 0 && (fds[0].revents & POLLIN)) return Wait::Ready;
    if (ready > 0 && (fds[0].revents & (POLLHUP | POLLERR))) return Wait::Closed;
  }
}

LineRead read_line(int fd, std::string& pending, Clock::time_point deadline, std::string& line, const std::string& who) {
  for (;;) {
    if (const auto nl = pending.find('\n'); nl != std::string::npos) {
      line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      return LineRead::Line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return LineRead::TimedOut;
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (r < 0 && errno != EINTR) throw std::runtime_error(who + ": poll: " + std::strerror(errno));
    if (r <= 0) continue;
    char buf[65536];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      pending.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return LineRead::Closed;
  }
}

}  // namespace shardfuzz::harness::subprocess
