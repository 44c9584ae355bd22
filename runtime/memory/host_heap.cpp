// mallopt settings for the host heap (runtime/memory/host_heap.h).
#include "runtime/memory/host_heap.h"

#include <malloc.h>

#include <cstdlib>
#include <mutex>

namespace shardfuzz::memory {
namespace {

void set_unless_user_chose(int option, const char* variable, int value) {
  if (std::getenv(variable) == nullptr) ::mallopt(option, value);
}

}  // namespace

void keep_freed_host_memory() {
  static std::once_flag once;
  std::call_once(once, [] {
    set_unless_user_chose(M_MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_", 32 << 20);
    set_unless_user_chose(M_TRIM_THRESHOLD, "MALLOC_TRIM_THRESHOLD_", 1 << 30);
    set_unless_user_chose(M_TOP_PAD, "MALLOC_TOP_PAD_", 16 << 20);
  });
}

}  // namespace shardfuzz::memory
