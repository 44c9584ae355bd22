// Folder listing for replays.
#include "harness/files/json_files.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace shardfuzz::harness {

std::vector<std::string> json_files_in(const std::string& dir, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw std::runtime_error(what + ": no folder at " + dir);
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".json" && entry.path().filename().string()[0] != '.')  // not hidden state
      files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace shardfuzz::harness
