// The import pipeline's steps on their own: overrides over the job's recipe, the flags each step
// names, the scenario built whole (the routing skew in it and in its description, no patching
// after the fact), and device-memory sizes.
#include "harness/import/byte_size.h"
#include "harness/import/import_pipeline.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace shardfuzz::harness::import {
namespace {

ImportRequest request(const std::string& config) {
  ImportRequest r;
  r.hf_config = std::string(SHARDFUZZ_SOURCE_DIR) + "/tests/data/hf/" + config;
  return r;
}

// The invalid_argument `f` throws, or "" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ImportPipeline, OverridesGoOverTheJobsRecipeAndAWorldTheJobFixesMustAgree) {
  ImportRequest r = request("qwen3-235b-a22b.json");
  r.torchtitan = std::string(SHARDFUZZ_SOURCE_DIR) + "/tests/data/torchtitan/qwen3-235b-16-ranks-ep8.toml";
  r.overrides.ac = "selective";
  r.overrides.seq_len = 1024;
  const ImportedModel m = read_import(r);
  EXPECT_EQ(m.recipe.world, 16);
  EXPECT_EQ(m.recipe.ep, 8);
  EXPECT_EQ(m.recipe.ac, "selective");
  EXPECT_EQ(m.recipe.seq_len, 1024);
  r.overrides.world = 8;
  EXPECT_EQ(error_of([&] { read_import(r); }).rfind("--world: 8 but ", 0), 0u);
}

TEST(ImportPipeline, TheLoraPlanIsCheckedBeforePlanning) {
  ImportRequest r = request("qwen3-8b.json");
  const ImportedModel m = read_import(r);
  r.lora = {5000, {"q_proj"}};
  EXPECT_EQ(error_of([&] { plan_import(r, m); }), "--lora-rank: 5000 outside [0, 4096]");
  r.lora = {8, {"qkv"}};
  EXPECT_EQ(error_of([&] { plan_import(r, m); }).rfind("--lora-targets: \"qkv\" is not one of", 0), 0u);
  r.lora = {8, {}};
  EXPECT_EQ(error_of([&] { plan_import(r, m); }), "--lora-rank: no --lora-targets to adapt");
  r.lora = {8, {"q_proj", "v_proj"}};
  EXPECT_TRUE(plan_import(r, m).lora);
}

TEST(ImportPipeline, TheRoutingSkewIsBuiltIntoTheScenarioAndItsDescription) {
  ImportRequest r = request("mixtral-8x7b.json");
  r.overrides.world = 4;
  r.overrides.ep = 2;
  const ImportedModel m = read_import(r);
  const FsdpPlan plan = plan_import(r, m);
  const ImportedScenario balanced = scenario_of(r, m, plan);
  ASSERT_TRUE(balanced.scenario.shape_only.has_value()) << balanced.execution;
  EXPECT_EQ(balanced.scenario.shape_only->routing_skew, 0.0);
  EXPECT_NE(balanced.execution.find("; routing balanced"), std::string::npos) << balanced.execution;
  r.routing_skew = 1.5;
  const ImportedScenario skewed = scenario_of(r, m, plan);
  ASSERT_TRUE(skewed.scenario.shape_only.has_value());
  EXPECT_EQ(skewed.scenario.shape_only->routing_skew, 1.5);
  const std::string routing = "; routing skewed (expert e receives a share proportional to 1/(e+1)^1.5)";
  ASSERT_GE(skewed.execution.size(), routing.size());
  EXPECT_EQ(skewed.execution.substr(skewed.execution.size() - routing.size()), routing) << skewed.execution;
  EXPECT_EQ(skewed.execution.find("balanced"), std::string::npos) << skewed.execution;
  EXPECT_EQ(skewed.execution.substr(0, skewed.execution.size() - routing.size()),
            balanced.execution.substr(0, balanced.execution.find("; routing ")));
}

TEST(ImportPipeline, TheScenarioStepNamesItsFlags) {
  ImportRequest r = request("qwen3-8b.json");
  const ImportedModel m = read_import(r);
  const FsdpPlan plan = plan_import(r, m);
  r.widths = "medium";
  EXPECT_EQ(error_of([&] { scenario_of(r, m, plan); }), "--widths: \"medium\" is not real or small");
  r.widths = "small";
  r.shape_only = true;
  EXPECT_EQ(error_of([&] { scenario_of(r, m, plan); }), "--shape-only: runs at the real widths, not --widths small");
  r.shape_only = false;
  r.routing_skew = 17;
  EXPECT_EQ(error_of([&] { scenario_of(r, m, plan); }).rfind("--routing-skew: 17", 0), 0u);
  r.routing_skew = 0;
  EXPECT_EQ(scenario_of(r, m, plan).execution.rfind("with data at small widths", 0), 0u);
}

TEST(ByteSize, UnitsAndPlainBytes) {
  EXPECT_EQ(parse_byte_size("80GiB", "--device-memory"), int64_t{80} << 30);
  EXPECT_EQ(parse_byte_size("80GB", "--device-memory"), int64_t{80'000'000'000});
  EXPECT_EQ(parse_byte_size("512MiB", "--device-memory"), int64_t{512} << 20);
  EXPECT_EQ(parse_byte_size("1.5KiB", "--device-memory"), 1536);
  EXPECT_EQ(parse_byte_size("4096", "--device-memory"), 4096);
  EXPECT_EQ(parse_byte_size("10B", "--device-memory"), 10);
}

TEST(ByteSize, AnythingElseIsNamed) {
  for (const char* bad : {"", "GiB", "80 GiB", "80TB", "0", "-1GiB", "nan", "2e18", "lots"})
    EXPECT_EQ(error_of([&] { parse_byte_size(bad, "--device-memory"); }),
              std::string("--device-memory: \"") + bad + "\" is not a size (80GiB, 80GB, 512MiB, or bytes)")
        << bad;
}

}  // namespace
}  // namespace shardfuzz::harness::import
