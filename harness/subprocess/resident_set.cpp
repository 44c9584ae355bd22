// /proc/PID/statm's second field, in pages.
#include "harness/subprocess/resident_set.h"
#include "harness/subprocess/proc_file.h"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace shardfuzz::harness {

int64_t resident_set_bytes(pid_t pid) {
  FILE* f = std::fopen(proc_file(pid, "statm").c_str(), "r");
  if (!f) return 0;
  long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<int64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace shardfuzz::harness
