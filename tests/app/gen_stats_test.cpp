// `shardfuzz gen --stats N`: the share of each feature, world and step count among the first N
// cases a campaign with that seed draws.
#include "app/gen_command.h"
#include "harness/scenario/scenario_features.h"

#include <gtest/gtest.h>

#include <sstream>

namespace shardfuzz::app {
namespace {

TEST(GenStats, EveryFeatureWorldAndStepCountHasItsShare) {
  GenOptions o;
  o.seed = 3;
  o.stats = 200;
  std::ostringstream out, err;
  ASSERT_EQ(run_gen(o, out, err), 0) << err.str();
  const std::string text = out.str();
  EXPECT_NE(text.find("gen: 200 cases of seed 3"), std::string::npos) << text;
  for (const auto& name : harness::scenario_feature_names()) EXPECT_NE(text.find("  " + name + " "), std::string::npos) << name;
  // The worlds' shares add up to the whole (each case has one world).
  double worlds = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("  world ", 0) == 0) worlds += std::stod(line.substr(line.find_last_of(' ', line.size() - 2) + 1));
  EXPECT_NEAR(worlds, 100.0, 0.5) << text;
  EXPECT_NE(text.find("  steps 3+"), std::string::npos) << text;
}

}  // namespace
}  // namespace shardfuzz::app
