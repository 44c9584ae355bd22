// Strings quoted for error messages as JSON writes them, cut short: keys and values in messages
// may come from hostile files.
#pragma once

#include <string>

namespace shardfuzz::harness {

std::string quoted(const std::string& s);

}  // namespace shardfuzz::harness
