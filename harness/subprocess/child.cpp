// fork, exec, process groups and waitpid, written once.
#include "harness/subprocess/child.h"

#include "harness/subprocess/io.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <utility>

extern char** environ;

namespace shardfuzz::harness::subprocess {
namespace {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// The pipes of one spawn, both ends, and the stderr file: opened before the fork.
struct Plumbing {
  int to[2] = {-1, -1};    // [0] the child reads, [1] the parent writes
  int from[2] = {-1, -1};  // [0] the parent reads, [1] the child writes
  int err[2] = {-1, -1};
  int err_file = -1;

  ~Plumbing() {
    for (int* fd : {&to[0], &to[1], &from[0], &from[1], &err[0], &err[1], &err_file}) close_fd(*fd);
  }

  void open(const SpawnOptions& o) {
    const auto make = [&](bool wanted, int (&fds)[2]) {
      if (wanted && ::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(o.who + ": pipe: " + std::strerror(errno));
    };
    make(o.to_child, to);
    make(o.from_child, from);
    make(o.stderr_pipe, err);
    if (!o.stderr_pipe && !o.stderr_file.empty())
      err_file = ::open(o.stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    // A child that is gone is an outcome its reader sees, not the end of this process.
    if (o.to_child) ::signal(SIGPIPE, SIG_IGN);
  }

  // In the child, after fork: its process group, its parent's death, its stderr.
  void child_side(const SpawnOptions& o, pid_t parent) {
    if (o.own_group) ::setpgid(0, 0);
    if (o.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    }
    if (err[1] >= 0) ::dup2(err[1], STDERR_FILENO);
    if (err_file >= 0) ::dup2(err_file, STDERR_FILENO);
  }

  // In the parent, after fork: keep its ends in `child`.
  void parent_side(const SpawnOptions& o, pid_t pid, int& to_fd, int& from_fd, int& err_fd) {
    if (o.own_group) ::setpgid(pid, pid);  // also here: the group exists before the parent kills it
    to_fd = to[1];
    from_fd = from[0];
    err_fd = err[0];
    to[1] = from[0] = err[0] = -1;
    if (err_fd >= 0) set_nonblocking(err_fd);
  }
};

pid_t fork_or_throw(const SpawnOptions& o) {
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(o.who + ": fork: " + std::strerror(errno));
  return pid;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> p;
  for (auto& s : strings) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

}  // namespace

Child::~Child() {
  if (pid_ > 0) {
    kill();
    reap();
  }
  close_pipes();
}

Child::Child(Child&& other) noexcept { *this = std::move(other); }

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0) {
      kill();
      reap();
    }
    close_pipes();
    pid_ = std::exchange(other.pid_, -1);
    group_ = std::exchange(other.group_, -1);
    to_ = std::exchange(other.to_, -1);
    from_ = std::exchange(other.from_, -1);
    err_ = std::exchange(other.err_, -1);
  }
  return *this;
}

void Child::close_to_child() { close_fd(to_); }

void Child::close_pipes() {
  close_fd(to_);
  close_fd(from_);
  close_fd(err_);
}

void Child::kill() {
  if (group_ > 0) ::kill(-group_, SIGKILL);
  if (pid_ > 0) ::kill(pid_, SIGKILL);
}

void Child::reaped() {
  pid_ = -1;
  close_pipes();
}

int Child::reap() {
  int status = 0;
  if (pid_ > 0)
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  reaped();
  return status;
}

std::optional<int> Child::try_reap() {
  if (pid_ <= 0) return std::nullopt;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  reaped();
  return status;
}

std::optional<int> Child::wait_exit(std::chrono::milliseconds grace) {
  const auto end = Clock::now() + grace;
  for (;;) {
    if (auto status = try_reap()) return status;
    if (Clock::now() >= end) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Child spawn(const SpawnOptions& options, const Command& command) {
  Plumbing plumbing;
  plumbing.open(options);
  std::vector<std::string> argv = command.argv;
  std::vector<std::string> env = command.env.value_or(std::vector<std::string>{});
  std::vector<char*> argp = pointers(argv), envp = pointers(env);
  const std::string failure = "cannot execute " + argv.at(0) + ": ";
  const pid_t parent = ::getpid();
  const pid_t pid = fork_or_throw(options);
  if (pid == 0) {
    plumbing.child_side(options, parent);
    if (plumbing.to[0] >= 0) ::dup2(plumbing.to[0], STDIN_FILENO);
    if (plumbing.from[1] >= 0) ::dup2(plumbing.from[1], STDOUT_FILENO);
    else if (options.stdout_to_stderr) ::dup2(STDERR_FILENO, STDOUT_FILENO);
    char** const envv = command.env ? envp.data() : environ;
    if (command.search_path) ::execvpe(argp[0], argp.data(), envv);
    else ::execve(argp[0], argp.data(), envv);
    if (command.report_exec_failure) {
      const std::string message = failure + std::strerror(errno) + "\n";
      (void)!::write(STDERR_FILENO, message.data(), message.size());
    }
    ::_exit(127);
  }
  Child child;
  child.pid_ = pid;
  child.group_ = options.own_group ? pid : -1;
  plumbing.parent_side(options, pid, child.to_, child.from_, child.err_);
  return child;
}

Child spawn(const SpawnOptions& options, const std::function<void(int from_parent, int to_parent)>& child_main) {
  Plumbing plumbing;
  plumbing.open(options);
  const pid_t parent = ::getpid();
  const pid_t pid = fork_or_throw(options);
  if (pid == 0) {
    plumbing.child_side(options, parent);
    const int in = std::exchange(plumbing.to[0], -1), out = std::exchange(plumbing.from[1], -1);
    for (int* fd : {&plumbing.to[1], &plumbing.from[0], &plumbing.err[0], &plumbing.err[1], &plumbing.err_file})
      close_fd(*fd);
    child_main(in, out);
    std::fflush(nullptr);
    ::_exit(0);
  }
  Child child;
  child.pid_ = pid;
  child.group_ = options.own_group ? pid : -1;
  plumbing.parent_side(options, pid, child.to_, child.from_, child.err_);
  return child;
}

}  // namespace shardfuzz::harness::subprocess
