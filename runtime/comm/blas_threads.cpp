// Which BLAS is loaded, from the process's memory map; OpenBLAS's thread count through dlsym (it
// is not a link-time dependency: Debian's LibTorch links the libblas.so.3 alternative).
#include "runtime/comm/blas_threads.h"

#include <ATen/Parallel.h>

#include <dlfcn.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <sstream>

namespace shardfuzz::comm {

std::string thread_unsafe_blas(const std::string& maps) {
  std::istringstream lines(maps);
  for (std::string line; std::getline(lines, line);) {
    const auto path = line.find('/');
    if (path == std::string::npos) continue;
    const std::string file = line.substr(path);
    if (file.find("openblas-serial/") != std::string::npos || file.find("libopenblasp-serial") != std::string::npos)
      return file;
  }
  return "";
}

std::string thread_unsafe_blas_loaded() {
  std::ifstream in("/proc/self/maps");
  std::ostringstream text;
  text << in.rdbuf();
  return thread_unsafe_blas(text.str());
}

bool blas_thread_pool_started() {
  using GetThreads = int (*)();
  auto* get = reinterpret_cast<GetThreads>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get && get() > 1;
}

void single_threaded_blas() {
  using SetThreads = void (*)(int);
  if (auto* set = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(1);
}

void one_intra_op_thread_per_process() {
  static std::mutex mu;
  static pid_t settled_in = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (settled_in == ::getpid()) return;
  at::set_num_threads(1);
  single_threaded_blas();
  settled_in = ::getpid();
}

bool stop_blas_thread_pool() {
  using Shutdown = int (*)();
  auto* shutdown = reinterpret_cast<Shutdown>(::dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"));
  if (!shutdown) return false;
  single_threaded_blas();
  shutdown();
  return true;
}

}  // namespace shardfuzz::comm
