// mkdtemp() and nftw().
#include "harness/files/temp_dir.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ftw.h>
#include <stdexcept>

namespace shardfuzz::harness {
namespace {

int remove_entry(const char* path, const struct stat*, int, struct FTW*) { return std::remove(path); }

std::string temp_root() {
  const char* env = std::getenv("TMPDIR");
  return env && *env ? env : "/tmp";
}

}  // namespace

bool remove_tree(const std::string& path) {
  return ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 || errno == ENOENT;
}

TempDir::TempDir(const std::string& prefix) {
  std::string pattern = temp_root() + "/" + prefix + "-XXXXXX";
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error("cannot create a folder " + pattern + ": " + std::strerror(errno));
  path_ = pattern;
}

TempDir::~TempDir() { remove_tree(path_); }

}  // namespace shardfuzz::harness
