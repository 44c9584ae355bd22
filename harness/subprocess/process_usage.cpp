// /proc/PID/stat: after the command name (in parentheses, which may itself hold spaces and
// parentheses, hence the last ')') come the fields from the 3rd on; minflt is the 10th, utime and
// stime the 14th and 15th, in clock ticks.
#include "harness/subprocess/process_usage.h"
#include "harness/subprocess/proc_file.h"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace shardfuzz::harness {

std::optional<ProcessUsage> process_usage(pid_t pid) {
  std::ifstream in(proc_file(pid, "stat"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto name_end = text.rfind(')');
  if (name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(name_end + 1));
  std::string skip;
  long long minflt = 0, utime = 0, stime = 0;
  for (int field = 3; field < 10; ++field) fields >> skip;  // state .. flags
  fields >> minflt;
  for (int field = 11; field < 14; ++field) fields >> skip;  // cminflt, majflt, cmajflt
  fields >> utime >> stime;
  if (!fields) return std::nullopt;
  const double tick = 1.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  return ProcessUsage{static_cast<double>(utime + stime) * tick, minflt};
}

}  // namespace shardfuzz::harness
