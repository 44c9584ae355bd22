// JUnit XML, the test-report dialect CI systems read (Jenkins, GitLab, GitHub test reporters):
// one <testsuite> per replayed folder or fuzz campaign, one <testcase> per reproducer and profile
// or per campaign, with <failure>, <error> or <skipped> carrying the message.
#pragma once

#include <string>
#include <vector>

namespace shardfuzz::harness {

struct JUnitCase {
  enum class Outcome { Passed, Failed, Error, Skipped };
  std::string classname;  // e.g. the reproducer's file
  std::string name;       // e.g. the profile
  double seconds = 0;
  Outcome outcome = Outcome::Passed;
  std::string message;  // one line: what failed, or why it was skipped
  std::string text;     // more (the verdict's full message, a command to replay)
};

struct JUnitSuite {
  std::string name;
  std::vector<JUnitCase> cases;
};

// The whole document, <testsuites> with counts and times summed.
std::string junit_xml(const std::vector<JUnitSuite>& suites);

}  // namespace shardfuzz::harness
