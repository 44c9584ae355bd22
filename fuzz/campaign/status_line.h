// A campaign's one progress line: rewritten in place on a terminal (every 0.2 s at most), a plain
// line every 5 s otherwise, and always a whole line at the end. What the line says is the
// caller's (a campaign's Session, a --jobs parent).
#pragma once

#include <unistd.h>

#include <ostream>
#include <string>

namespace shardfuzz::fuzz {

class StatusLine {
 public:
  // `at_once`: the first line is due at once, not after the first period.
  StatusLine(std::ostream& out, bool at_once) : out_(out), tty_(::isatty(STDOUT_FILENO) != 0), last_(at_once ? -1e9 : 0) {}
  // Whether a line is due `seconds` after the start; a final one always is.
  bool due(double seconds, bool final) const { return final || seconds - last_ >= (tty_ ? 0.2 : 5.0); }
  void print(double seconds, const std::string& line, bool final) {
    last_ = seconds;
    out_ << (tty_ && !final ? "\r" : "") << line << (tty_ && !final ? "" : "\n") << std::flush;
  }

 private:
  std::ostream& out_;
  const bool tty_;
  double last_;
};

}  // namespace shardfuzz::fuzz
