// `shardfuzz import --project`: which run it chooses (shape-only at the real widths when data would
// not fit, and it says so), the routing assumption it prints, what the run held beside the
// projection, and bad flags named.
#include "app/exit_codes.h"
#include "app/import_command.h"
#include "harness/reproducer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>

namespace shardfuzz::app {
namespace {

ImportOptions projecting(const std::string& config) {
  ImportOptions o;
  o.hf_config = std::string(SHARDFUZZ_SOURCE_DIR) + "/tests/data/hf/" + config;
  o.project = true;
  return o;
}

TEST(ImportCommand, AModelNoDataRunHoldsRunsShapeOnlySayingWhyAndShowsWhatTheRunHeld) {
  ImportOptions o = projecting("llama-3-70b.json");
  o.world = 8;
  std::ostringstream out, err;
  ASSERT_EQ(run_import(o, out, err), kExitOk) << err.str();
  const std::string text = out.str();
  EXPECT_NE(text.find("import: runs shape-only at the real widths: a run with data would not fit (size budget"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("routing"), std::string::npos) << "a dense model routes nothing: " << text;  // nor assumes it
  EXPECT_NE(text.find("world 8 shape-only run"), std::string::npos) << text;
  EXPECT_NE(text.find("run holds"), std::string::npos) << text;
}

TEST(ImportCommand, TheRoutingAssumptionIsPrintedAndTheScenarioCarriesIt) {
  ImportOptions o = projecting("mixtral-8x7b.json");
  o.world = 4;
  o.ep = 2;
  o.routing_skew = 1.0;
  o.scenario_out = ::testing::TempDir() + "/mixtral-shape-only.json";
  std::ostringstream out, err;
  ASSERT_EQ(run_import(o, out, err), kExitOk) << err.str();
  EXPECT_NE(out.str().find("routing skewed (expert e receives a share proportional to 1/(e+1)^1)"), std::string::npos)
      << out.str();
  const harness::Scenario sc = harness::load_scenario_or_reproducer(o.scenario_out);
  ASSERT_TRUE(sc.shape_only.has_value());
  EXPECT_EQ(sc.shape_only->routing_skew, 1.0);
  EXPECT_EQ(sc.dims.dim, 4096);
  EXPECT_EQ(sc.dims.experts, 8);
  std::remove(o.scenario_out.c_str());
}

TEST(ImportCommand, SmallWidthsRunWithDataAndBadFlagsAreNamed) {
  ImportOptions o = projecting("qwen3-8b.json");
  o.widths = "small";
  std::ostringstream out, err;
  ASSERT_EQ(run_import(o, out, err), kExitOk) << err.str();
  EXPECT_NE(out.str().find("import: runs with data at small widths"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("run holds"), std::string::npos) << out.str();
  for (auto [flag, set] : std::initializer_list<std::pair<const char*, void (*)(ImportOptions&)>>{
           {"--widths", [](ImportOptions& x) { x.widths = "medium"; }},
           {"--shape-only", [](ImportOptions& x) { x.widths = "small", x.shape_only = true; }},
           {"--routing-skew", [](ImportOptions& x) { x.routing_skew = -1; }}}) {
    ImportOptions bad = projecting("qwen3-8b.json");
    set(bad);
    std::ostringstream o2, e2;
    EXPECT_EQ(run_import(bad, o2, e2), kExitUsage) << flag;
    EXPECT_NE(e2.str().find(flag), std::string::npos) << e2.str();
  }
}

}  // namespace
}  // namespace shardfuzz::app
