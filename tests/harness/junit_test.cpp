// CI reports: the JUnit writer's counts, outcomes and escaping (`replay --junit` end to end:
// tests/app/replay_command_test.cpp).
#include "harness/report/junit.h"

#include <gtest/gtest.h>

#include <string>

namespace shardfuzz::harness {
namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(JUnit, CountsOutcomesAndEscapesEverything) {
  using Outcome = JUnitCase::Outcome;
  JUnitSuite suite{"replay <dir> & \"more\"", {}};
  suite.cases.push_back({"a.json", "strict", 0.5, Outcome::Passed, "", ""});
  suite.cases.push_back({"b.json", "torch-2.9", 1.25, Outcome::Failed, "expected pass, got <liveness>",
                         "rank 0: 'x' < y & z\x01"});
  suite.cases.push_back({"c.json", "torch-2.11", 0, Outcome::Skipped, "not observable", ""});
  suite.cases.push_back({"d.json", "-", 0, Outcome::Error, "not a reproducer", ""});
  const std::string xml = junit_xml({suite});
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"shardfuzz\" tests=\"4\" "
                      "failures=\"1\" errors=\"1\" skipped=\"1\" time=\"1.750\">",
                      0),
            0u)
      << xml;
  EXPECT_NE(xml.find("<testsuite name=\"replay &lt;dir&gt; &amp; &quot;more&quot;\" tests=\"4\""), std::string::npos);
  EXPECT_NE(xml.find("<testcase classname=\"a.json\" name=\"strict\" time=\"0.500\"/>"), std::string::npos);
  EXPECT_NE(xml.find("<failure message=\"expected pass, got &lt;liveness&gt;\">rank 0: &apos;x&apos; &lt; y &amp; z</failure>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<skipped message=\"not observable\"/>"), std::string::npos);
  EXPECT_NE(xml.find("<error message=\"not a reproducer\"/>"), std::string::npos);
  EXPECT_EQ(count(xml, "<testcase "), 4);
  EXPECT_EQ(count(xml, "</testcase>"), 3) << "the passed case closes itself";
}

}  // namespace
}  // namespace shardfuzz::harness
