// How a child process ended, from its waitpid status: the words every user of harness/subprocess
// reports it in.
#pragma once

#include <string>

namespace shardfuzz::harness::subprocess {

struct ExitStatus {
  int code = -1;   // it exited: its exit code (-1: it did not exit normally)
  int signal = 0;  // a signal ended it: its number (0: none)
  static ExitStatus from_wait(int status);
  bool signalled() const { return signal != 0; }
  // "died of SIGSEGV", "exited with code 3".
  std::string describe() const;
};

// "SIGSEGV", "SIGABRT", ... for the signals a crash or a kill sends; "signal N" for the others.
std::string signal_name(int signal);

}  // namespace shardfuzz::harness::subprocess
