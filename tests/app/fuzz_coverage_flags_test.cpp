// `fuzz --coverage-guided [--corpus DIR]`: refused, naming the flag and the build option, in a
// build without the coverage hook (the test binary's); --corpus alone is refused too.
#include "app/fuzz_command.h"
#include "fuzz/coverage/edge_map.h"

#include <gtest/gtest.h>

#include <sstream>

namespace shardfuzz::app {
namespace {

TEST(FuzzCoverageFlags, GuidanceNeedsTheCoverageBuildAndCorpusNeedsGuidance) {
  FuzzOptions o;
  o.cases = 1;
  o.corpus = "/tmp/nowhere";
  std::ostringstream out, err;
  EXPECT_EQ(run_fuzz(o, "shardfuzz fuzz --corpus /tmp/nowhere", out, err), 2);
  EXPECT_NE(err.str().find("--corpus: only with --coverage-guided"), std::string::npos) << err.str();
  if (fuzz::coverage::instrumented()) GTEST_SKIP() << "a coverage build";
  o.coverage_guided = true;
  std::ostringstream out2, err2;
  EXPECT_EQ(run_fuzz(o, "shardfuzz fuzz --coverage-guided", out2, err2), 2);
  EXPECT_NE(err2.str().find("--coverage-guided: this shardfuzz was built without the coverage hook"), std::string::npos)
      << err2.str();
  EXPECT_NE(err2.str().find("-DSHARDFUZZ_COVERAGE=ON"), std::string::npos) << err2.str();
}

}  // namespace
}  // namespace shardfuzz::app
