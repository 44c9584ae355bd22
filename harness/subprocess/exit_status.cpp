// ExitStatus from waitpid's status word.
#include "harness/subprocess/exit_status.h"

#include <sys/wait.h>

#include <csignal>

namespace shardfuzz::harness::subprocess {

ExitStatus ExitStatus::from_wait(int status) {
  ExitStatus s;
  if (WIFSIGNALED(status))
    s.signal = WTERMSIG(status);
  else if (WIFEXITED(status))
    s.code = WEXITSTATUS(status);
  return s;
}

std::string ExitStatus::describe() const {
  return signalled() ? "died of " + signal_name(signal) : "exited with code " + std::to_string(code);
}

std::string signal_name(int s) {
  switch (s) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    default: return "signal " + std::to_string(s);
  }
}

}  // namespace shardfuzz::harness::subprocess
