// Writing a file so that a reader never sees half of it: reports, reproducers, campaign state.
#pragma once

#include <string>

namespace shardfuzz::harness {

// Writes `text` to `path` through a temporary file in the same folder and a rename (creating the
// folder). Throws std::runtime_error naming the file it could not write.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace shardfuzz::harness
