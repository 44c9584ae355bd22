// ChildOutcome::describe and the fork precondition.
#include "harness/isolation/child_outcome.h"

#include "harness/subprocess/exit_status.h"

#include <dirent.h>

#include <sstream>
#include <stdexcept>

namespace shardfuzz::harness::isolation {
namespace {

// The last `lines` lines of `text`, trailing blanks dropped.
std::string last_lines(std::string text, int lines) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::size_t pos = text.size();
  for (int i = 0; i < lines && pos != std::string::npos && pos > 0; ++i) pos = text.rfind('\n', pos - 1);
  return pos == std::string::npos ? text : text.substr(pos + 1);
}

}  // namespace

int thread_count() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

void require_single_threaded(const char* what) {
  if (const int n = thread_count(); n > 1)
    throw std::logic_error(std::string("isolation: cannot fork ") + what + " from a process with " +
                           std::to_string(n) +
                           " threads (LibTorch's thread pools do not survive fork); run it unisolated (--no-isolation), "
                           "or, with OpenBLAS's pthread build, start it with OPENBLAS_NUM_THREADS=1 (its thread pool "
                           "starts with the process)");
}

std::string ChildOutcome::describe(const Limits& limits) const {
  std::ostringstream os;
  os.precision(3);
  switch (kind) {
    case Kind::Returned: os << "returned after " << seconds << " s"; break;
    case Kind::Threw: os << "threw after " << seconds << " s: " << output; break;
    case Kind::Signalled: os << subprocess::ExitStatus{-1, signal}.describe() << " after " << seconds << " s"; break;
    case Kind::Exited:
      os << subprocess::ExitStatus{exit_code, 0}.describe() << " after " << seconds << " s without returning";
      break;
    case Kind::TimedOut:
      os << "ran past its wall-clock limit of " << limits.wall.count() / 1000.0 << " s and was killed";
      break;
    case Kind::OutOfMemory:
      os << "passed its memory limit of " << (limits.memory_bytes >> 20) << " MiB (resident " << (peak_rss_bytes >> 20)
         << " MiB) after " << seconds << " s and was killed";
      break;
  }
  if (died() && !stderr_tail.empty()) os << "; its stderr ended: " << last_lines(stderr_tail, 3);
  return os.str();
}

}  // namespace shardfuzz::harness::isolation
