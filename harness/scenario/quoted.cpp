// Quoting for error messages.
#include "harness/scenario/quoted.h"

#include <cstdio>

namespace shardfuzz::harness {

std::string quoted(const std::string& s) {
  constexpr std::size_t kMaxShown = 120;
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMaxShown) out += "...";
  return out + "\"";
}

}  // namespace shardfuzz::harness
