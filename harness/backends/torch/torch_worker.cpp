// Child process plumbing for the torch worker: fork/exec with pipes, poll() with a deadline.
#include "harness/backends/torch/torch_worker.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace shardfuzz::harness::torch_backend {
namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

TorchWorker::TorchWorker(std::string python, std::string script, std::string log)
    : python_(std::move(python)), script_(std::move(script)), log_(std::move(log)) {}

TorchWorker::~TorchWorker() {
  if (pid_ > 0 && to_worker_ >= 0) {
    const std::string quit = "{\"op\":\"quit\"}\n";
    (void)!::write(to_worker_, quit.data(), quit.size());
    close_fd(to_worker_);
  }
  stop(std::chrono::seconds(5));
}

void TorchWorker::start() {
  ::signal(SIGPIPE, SIG_IGN);  // a dead worker is a WorkerFailure, not the end of the harness
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("torch worker: pipe: ") + std::strerror(errno));
  const int log_fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("torch worker: fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);  // its own process group: killing it takes the rank processes along
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    if (log_fd >= 0) ::dup2(log_fd, STDERR_FILENO);
    ::execlp(python_.c_str(), python_.c_str(), "-u", script_.c_str(), static_cast<char*>(nullptr));
    const std::string msg = "cannot execute " + python_ + ": " + std::strerror(errno) + "\n";
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  if (log_fd >= 0) ::close(log_fd);
  ::close(in[0]);
  ::close(out[1]);
  pid_ = pid;
  to_worker_ = in[1];
  from_worker_ = out[0];
  pending_.clear();
}

std::string TorchWorker::stop(std::chrono::milliseconds grace) {
  close_fd(to_worker_);
  close_fd(from_worker_);
  std::string how = "was not running";
  if (pid_ > 0) {
    int status = 0;
    bool exited = ::waitpid(pid_, &status, WNOHANG) == pid_;
    for (auto end = std::chrono::steady_clock::now() + grace; !exited && std::chrono::steady_clock::now() < end;) {
      ::usleep(20 * 1000);
      exited = ::waitpid(pid_, &status, WNOHANG) == pid_;
    }
    ::kill(-pid_, SIGKILL);  // the rank processes too
    if (!exited) ::waitpid(pid_, &status, 0);
    how = !exited                ? "was killed"
          : WIFEXITED(status)    ? "exited with code " + std::to_string(WEXITSTATUS(status))
          : WIFSIGNALED(status)  ? "died of signal " + std::to_string(WTERMSIG(status))
                                 : "stopped";
  }
  pid_ = -1;
  return how;
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
  if (pid_ <= 0) start();
  const std::string line = request.dump() + "\n";
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = ::write(to_worker_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string how = stop();
      throw WorkerFailure("crash", "torch worker (" + python_ + " " + script_ + ") " + how + "; its log:" + log_tail());
    }
    done += static_cast<std::size_t>(n);
  }
  const auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto nl = pending_.find('\n'); nl != std::string::npos) {
      const std::string reply = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      try {
        return nlohmann::json::parse(reply);
      } catch (const std::exception& e) {
        stop();
        throw WorkerFailure("crash", "torch worker answered something that is not JSON (" + std::string(e.what()) +
                                         "): " + reply.substr(0, 200));
      }
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      stop();
      throw WorkerFailure("deadline", "torch worker gave no answer within " + std::to_string(timeout.count() / 1000) +
                                          " s (killed with its rank processes); its log:" + log_tail());
    }
    pollfd p{from_worker_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (r < 0 && errno != EINTR) throw std::runtime_error(std::string("torch worker: poll: ") + std::strerror(errno));
    if (r <= 0) continue;
    char buf[65536];
    const ssize_t n = ::read(from_worker_, buf, sizeof buf);
    if (n > 0) {
      pending_.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const std::string how = stop(std::chrono::seconds(2));  // its stdout closed: it is on its way out
    throw WorkerFailure("crash", "torch worker (" + python_ + " " + script_ + ") " + how + "; its log:" + log_tail());
  }
}

}  // namespace shardfuzz::harness::torch_backend
