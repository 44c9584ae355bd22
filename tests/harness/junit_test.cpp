// CI reports: the JUnit writer's counts, outcomes and escaping; `replay --junit --summary` on a
// folder with a reproducer that passes and one whose expectation is wrong: one test case per
// reproducer and profile, the wrong one a failure with its replay command, the JSON summary the
// same results.
#include "fuzz/cli/replay_command.h"
#include "harness/report/junit.h"
#include "harness/reproducer.h"
#include "harness/files/temp_dir.h"

#include <CLI/CLI.hpp>  // the definitions fuzz/main.cpp otherwise brings (the cli headers declare)
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#ifndef SHARDFUZZ_SOURCE_DIR
#define SHARDFUZZ_SOURCE_DIR "."
#endif

namespace shardfuzz::harness {
namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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

TEST(JUnit, ReplayWritesOneCasePerReproducerAndProfileAndASummary) {
  TempDir dir("shardfuzz-junit");
  const std::string source = std::string(SHARDFUZZ_SOURCE_DIR) + "/reproducers/explicit-backward-prefetch-of-finished-group.json";
  Reproducer good = load_reproducer(source);
  ASSERT_FALSE(good.expected.empty());
  write_file_atomically(dir.path() + "/good.json", read(source));
  Reproducer wrong = good;
  const std::string profile = wrong.expected.begin()->first;
  const std::string was = wrong.expected.begin()->second;
  wrong.expected = {{profile, was == "pass" ? "liveness" : "pass"}};
  write_file_atomically(dir.path() + "/wrong.json", to_json(wrong).dump(1));

  cli::ReplayOptions options;
  options.dir = dir.path();
  options.reports.junit = dir.path() + "/junit.xml";
  options.reports.summary = dir.path() + "/.summary.json";  // hidden: replay reads *.json
  std::ostringstream out, err;
  EXPECT_EQ(cli::run_replay(options, out, err), 1) << out.str() << err.str();

  const std::string xml = read(options.reports.junit);
  EXPECT_EQ(count(xml, "<testcase "), static_cast<int>(good.expected.size()) + 1) << xml;
  EXPECT_EQ(count(xml, "<failure "), 1) << xml;
  EXPECT_NE(xml.find("<testcase classname=\"wrong.json\" name=\"" + profile + "\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("replay with: shardfuzz run --profile " + profile + " " + dir.path() + "/wrong.json"),
            std::string::npos)
      << xml;

  const nlohmann::json summary = nlohmann::json::parse(read(options.reports.summary));
  EXPECT_EQ(summary["command"], "replay");
  EXPECT_EQ(summary["failed"], 1);
  EXPECT_EQ(summary["passed"], static_cast<int>(good.expected.size()));
  EXPECT_EQ(summary["results"].size(), good.expected.size() + 1);
}

}  // namespace
}  // namespace shardfuzz::harness
