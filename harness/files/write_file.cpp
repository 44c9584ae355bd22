// write_file_atomically: the temporary file carries this process's id, so concurrent writers of
// one path (campaign workers) never share it.
#include "harness/files/write_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace shardfuzz::harness {

void write_file_atomically(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  const fs::path tmp = target.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("short write to " + tmp.string());
  }
  fs::rename(tmp, target);
}

}  // namespace shardfuzz::harness
