// The JUnit writer. Written by hand: the format is five elements and XML's five escapes, where a
// DOM library would be one more package on every host (the GPU machine has no registry).
#include "harness/report/junit.h"

#include "harness/report/markup.h"

#include <iomanip>
#include <sstream>

namespace shardfuzz::harness {
namespace {

std::string seconds(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << s;
  return os.str();
}

struct Counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double time = 0;
  void add(const JUnitCase& c) {
    ++tests;
    failures += c.outcome == JUnitCase::Outcome::Failed;
    errors += c.outcome == JUnitCase::Outcome::Error;
    skipped += c.outcome == JUnitCase::Outcome::Skipped;
    time += c.seconds;
  }
  std::string attributes() const {
    return "tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(failures) + "\" errors=\"" +
           std::to_string(errors) + "\" skipped=\"" + std::to_string(skipped) + "\" time=\"" + seconds(time) + "\"";
  }
};

}  // namespace

std::string junit_xml(const std::vector<JUnitSuite>& suites) {
  Counts all;
  std::ostringstream body;
  for (const JUnitSuite& suite : suites) {
    Counts counts;
    for (const JUnitCase& c : suite.cases) counts.add(c);
    all.tests += counts.tests;
    all.failures += counts.failures;
    all.errors += counts.errors;
    all.skipped += counts.skipped;
    all.time += counts.time;
    body << "  <testsuite name=\"" << markup_escaped(suite.name) << "\" " << counts.attributes() << ">\n";
    for (const JUnitCase& c : suite.cases) {
      body << "    <testcase classname=\"" << markup_escaped(c.classname) << "\" name=\"" << markup_escaped(c.name)
           << "\" time=\"" << seconds(c.seconds) << "\"";
      const char* element = c.outcome == JUnitCase::Outcome::Failed  ? "failure"
                            : c.outcome == JUnitCase::Outcome::Error ? "error"
                            : c.outcome == JUnitCase::Outcome::Skipped ? "skipped"
                                                                       : nullptr;
      if (!element) {
        body << "/>\n";
        continue;
      }
      body << ">\n      <" << element << " message=\"" << markup_escaped(c.message) << "\"";
      if (c.text.empty())
        body << "/>\n";
      else
        body << ">" << markup_escaped(c.text) << "</" << element << ">\n";
      body << "    </testcase>\n";
    }
    body << "  </testsuite>\n";
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"shardfuzz\" " + all.attributes() + ">\n" +
         body.str() + "</testsuites>\n";
}

}  // namespace shardfuzz::harness
