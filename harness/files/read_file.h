// Reading a whole file as text: reproducers, reports' assets, shards' outputs.
#pragma once

#include <string>

namespace shardfuzz::harness {

// The file's bytes; throws std::runtime_error naming the file when it cannot be opened.
std::string read_file(const std::string& path);
// The same, or "" when it cannot be opened (for what is optional).
std::string read_file_or_empty(const std::string& path);

}  // namespace shardfuzz::harness
