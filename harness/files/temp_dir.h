// A folder under the system's temporary directory, removed with everything in it on destruction.
// The removal walks the tree with POSIX nftw(), not std::filesystem::remove_all: against the torch
// wheel's LibTorch (built with a devtoolset whose libstdc++ pieces its libraries export), remove_all
// resolved to an incompatible copy and crashed the harness on the GPU machine.
#pragma once

#include <string>

namespace shardfuzz::harness {

class TempDir {
 public:
  // `prefix`: the folder's name before a random suffix. Throws std::runtime_error when it cannot
  // be created.
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Removes `path` and everything under it; false (errno set) when something could not be removed.
bool remove_tree(const std::string& path);

}  // namespace shardfuzz::harness
