// read_file and read_file_or_empty.
#include "harness/files/read_file.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace shardfuzz::harness {

std::string read_file_or_empty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::string read_file(const std::string& path) {
  if (!std::ifstream(path, std::ios::binary)) throw std::runtime_error("cannot open " + path);
  return read_file_or_empty(path);
}

}  // namespace shardfuzz::harness
