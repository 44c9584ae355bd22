// Starting a child process and ending it: fork (the child runs a function of this program) or
// fork+exec, in a process group of its own so that killing it takes what it started along, with
// pipes to it, from it and from its stderr; kill, reap, wait for its exit within a grace period.
// The one place the harness forks (the isolated case workers, the torch worker, rank processes).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::harness::subprocess {

struct SpawnOptions {
  std::string who = "child process";  // names the child in errors ("<who>: fork: ...")
  bool own_group = true;              // leads its own process group (kill() ends the whole group)
  bool die_with_parent = false;       // PR_SET_PDEATHSIG: a parent killed with SIGKILL leaves no child
  // Pipes. With exec, to_child is the child's stdin and from_child its stdout; without exec the
  // child's function gets their ends (its stdout stays the parent's).
  bool to_child = false;
  bool from_child = false;
  bool stderr_pipe = false;   // the child's stderr into a pipe, non-blocking on the parent's side
  std::string stderr_file;    // else, when not empty: the child's stderr appended to this file
  bool stdout_to_stderr = false;  // exec without from_child: its stdout onto its stderr
};

// What fork+exec runs. `env` nullopt: this process's environment.
struct Command {
  std::vector<std::string> argv;
  std::optional<std::vector<std::string>> env;
  bool search_path = true;        // argv[0] looked up in PATH (execvp) or taken as a path (execve)
  bool report_exec_failure = true;  // "cannot execute ARGV0: why" on the child's stderr before exit 127
};

// A started child; move-only. Destroying one that still runs kills its group and reaps it.
class Child {
 public:
  Child() = default;
  ~Child();
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }  // not reaped yet
  int to_child() const { return to_; }        // -1 when not piped or closed
  int from_child() const { return from_; }
  int stderr_fd() const { return err_; }
  void close_to_child();  // the child reads end of file
  void close_pipes();

  // SIGKILL to its process group (also after the child itself was reaped: what it started) and
  // to the child while it is not reaped.
  void kill();
  // Blocks until the child has exited; closes the pipes; its waitpid status (0 when not running).
  int reap();
  // The child's waitpid status when it has exited (reaped, pipes closed), else nullopt.
  std::optional<int> try_reap();
  // try_reap until it has exited or `grace` passed (checked at least once).
  std::optional<int> wait_exit(std::chrono::milliseconds grace);

 private:
  friend Child spawn(const SpawnOptions&, const Command&);
  friend Child spawn(const SpawnOptions&, const std::function<void(int from_parent, int to_parent)>&);
  void reaped();
  pid_t pid_ = -1;
  pid_t group_ = -1;  // its process group when it leads one
  int to_ = -1, from_ = -1, err_ = -1;
};

// fork+exec. Everything the child needs is built before the fork; after it, only dup2 and exec.
// Throws std::runtime_error naming options.who when pipe or fork fail.
Child spawn(const SpawnOptions& options, const Command& command);
// fork only: the child runs `child_main` with its ends of the pipes (-1 where none), then exits
// with _exit(0) (no static destructors: the parent owns them). The caller must be single-threaded
// where it matters (LibTorch's pools do not survive fork: harness/isolation/child_outcome.h).
Child spawn(const SpawnOptions& options, const std::function<void(int from_parent, int to_parent)>& child_main);

}  // namespace shardfuzz::harness::subprocess
