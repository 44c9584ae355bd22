// Properties of the scenario generator (fuzz/gen/scenario.h) and its seeded draws
// (fuzz/gen/generate.h): every scenario it yields validates, draws are reproducible from a seed,
// pinned settings hold, and the shapes the campaign needs come up often enough.
#include "fuzz/gen/generate.h"
#include "fuzz/gen/scenario.h"
#include "harness/scenario/scenario_json.h"
#include "tests/fuzz/rc_property.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <map>
#include <memory>
#include <set>

namespace shardfuzz::fuzz {
namespace {

using harness::BlockSpec;
using harness::Scenario;
using testing::check_property;

// Property "every generated scenario validates", generator gen::scenario, 2,000 cases over sizes
// 0-100.
TEST(GenScenario, EveryScenarioValidates) {
  const GenConfig config;
  auto cases = std::make_shared<int>(0);
  check_property("gen::scenario validates", 2000, 1, [config, cases] {
    const Scenario sc = *gen::scenario(config);
    ++*cases;
    sc.validate();
  });
  EXPECT_EQ(*cases, 2000);
}

// The same property with the world and profile pinned (`--world N --profile P`), including a world
// past the drawn range and odd worlds (divisibility repairs), and every scenario keeps the pins.
TEST(GenScenario, PinnedWorldAndProfileHoldAndValidate) {
  for (int world : {1, 3, 6, 16}) {
    GenConfig config;
    config.world = world;
    config.profile = "strict";
    check_property("gen::scenario world=" + std::to_string(world), 300, 7, [config] {
      const Scenario sc = *gen::scenario(config);
      sc.validate();
      RC_ASSERT(sc.world_size == config.world);
      RC_ASSERT(sc.profile.name == config.profile);
    });
  }
}

// Every shrink of a generated scenario also validates (shrinking stays inside the legal space):
// every child of 60 draws, and every child of a sample of those children.
TEST(GenScenario, ShrinksValidate) {
  const GenConfig config;
  int checked = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const auto root = generate_shrinkable(config, seed, 100);
    auto level1 = root.shrinks();
    int k = 0;
    while (auto child = level1.next()) {
      ASSERT_NO_THROW(child->value().validate()) << harness::to_json_text(child->value());
      ++checked;
      if (k++ % 25 != 0) continue;  // a sample of the second level
      auto level2 = child->shrinks();
      while (auto grandchild = level2.next()) {
        ASSERT_NO_THROW(grandchild->value().validate()) << harness::to_json_text(grandchild->value());
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 3000);
}

TEST(GenScenario, GenerateIsDeterministic) {
  const GenConfig config;
  for (uint64_t seed : {0ull, 1ull, 42ull, 0xdeadbeefull, ~0ull})
    for (int size : {0, 10, 50, 100}) {
      const std::string a = harness::to_json_text(generate(config, seed, size));
      const std::string b = harness::to_json_text(generate(config, seed, size));
      EXPECT_EQ(a, b) << "seed " << seed << " size " << size;
      EXPECT_EQ(a, harness::to_json_text(generate_shrinkable(config, seed, size).value()));
    }
  // And different seeds give different scenarios.
  std::set<std::string> distinct;
  for (uint64_t seed = 0; seed < 50; ++seed) distinct.insert(harness::to_json_text(generate(config, seed, 100)));
  EXPECT_GE(distinct.size(), 49u);
}

TEST(GenScenario, GeneratedJsonRoundTrips) {
  const GenConfig config;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const Scenario sc = generate(config, seed, 100);
    const std::string text = harness::to_json_text(sc);
    EXPECT_EQ(harness::to_json_text(harness::parse_scenario(text)), text);
  }
}

TEST(GenScenario, BadConfigIsRejected) {
  GenConfig config;
  config.profile = "torch-1.0";
  EXPECT_THROW(gen::scenario(config), std::invalid_argument);
  config = {};
  config.world = 65;
  EXPECT_THROW(gen::scenario(config), std::invalid_argument);
  config = {};
  config.max_blocks = 0;
  EXPECT_THROW(gen::scenario(config), std::invalid_argument);
  config = {};
  config.max_steps = 0;
  EXPECT_THROW(gen::scenario(config), std::invalid_argument);
  config.max_steps = harness::ScenarioLimits::kMaxSteps + 1;
  EXPECT_THROW(gen::scenario(config), std::invalid_argument);
}

TEST(GenScenario, SmallSizesGiveFewBlocks) {
  const GenConfig config;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    EXPECT_EQ(generate(config, seed, 0).blocks.size(), 1u);
    EXPECT_LE(generate(config, seed, 100).blocks.size(), 4u);
  }
}

// Coverage over 4,000 draws at size 100: every feature the campaign relies on shows up, the
// common cases are common and the rare ones not too rare.
TEST(GenScenario, CoversTheInterestingShapes) {
  const GenConfig config;
  constexpr int kDraws = 4000;
  std::map<std::string, int> count;
  std::set<int> worlds;
  for (int seed = 0; seed < kDraws; ++seed) {
    const Scenario sc = generate(config, static_cast<uint64_t>(seed), 100);
    worlds.insert(sc.world_size);
    const std::size_t n = sc.blocks.size();
    count["blocks=" + std::to_string(n)]++;
    if (sc.expert_shard_size > 0) count["hsdp"]++;
    if (sc.fully_shard.count("out")) count["out wrapped"]++;
    bool upstream = false, depth3 = false, lists = false, empty_list = false, self_list = false, ac = false;
    bool frozen = false, int_raf = false, shard_dim = false, experts_mesh = false, torchtitan = false;
    for (std::size_t i = 0; i < n; ++i) {
      const BlockSpec& b = sc.blocks[i];
      const std::string p = "layers." + std::to_string(i);
      const bool experts = sc.fully_shard.count(p + ".moe.experts") > 0;
      if (b.kind == BlockSpec::Kind::Moe && b.gated && experts && b.ac != ac::CheckpointMode::None &&
          sc.fully_shard.count("out"))
        upstream = true;
      if (sc.fully_shard.count(p) && sc.fully_shard.count(p + ".moe") && experts) depth3 = true;
      if (b.ac != ac::CheckpointMode::None) ac = true;
      if (b.frozen) frozen = true;
      if (b.kind == BlockSpec::Kind::Mlp) count["mlp block"]++;
      if (b.ac == ac::CheckpointMode::Reentrant) count["reentrant block"]++;
      for (const char* sub : {".attn", ".moe.router", ".mlp.fc1", ".mlp.fc2", ".mlp"})
        if (sc.fully_shard.count(p + sub)) count[std::string("wrapped ") + sub]++;
      auto it = sc.fully_shard.find(p);
      if (it != sc.fully_shard.end() && i + 1 < n && it->second.forward_prefetch &&
          !it->second.forward_prefetch->empty() && (*it->second.forward_prefetch)[0] == "layers." + std::to_string(i + 1))
        torchtitan = true;
    }
    for (const auto& [path, spec] : sc.fully_shard) {
      for (const auto* list : {&spec.forward_prefetch, &spec.backward_prefetch}) {
        if (!*list) continue;
        lists = true;
        if ((*list)->empty()) empty_list = true;
        if ((*list)->size() == 1 && (**list)[0] == "self") self_list = true;
      }
      if (spec.reshard_after_forward.kind == fsdp::ReshardAfterForward::Kind::Int) int_raf = true;
      if (spec.shard_dim == 1) shard_dim = true;
      if (spec.mesh == "experts") experts_mesh = true;
    }
    count["upstream shape"] += upstream;
    count["depth 3"] += depth3;
    count["explicit lists"] += lists;
    count["empty list"] += empty_list;
    count["[self] list"] += self_list;
    count["torchtitan-like"] += torchtitan;
    count["ac"] += ac;
    count["frozen"] += frozen;
    count["int reshard"] += int_raf;
    count["shard_dim 1"] += shard_dim;
    count["experts mesh"] += experts_mesh;
    count["adamw"] += sc.optimizer.kind == train::OptimizerConfig::Kind::AdamW;
  }
  for (const auto& [what, n] : count) std::cout << "  " << what << ": " << n << " / " << kDraws << "\n";
  EXPECT_EQ(worlds, (std::set<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  auto at_least = [&](const std::string& what, double fraction) {
    EXPECT_GE(count[what], static_cast<int>(fraction * kDraws)) << what;
  };
  for (int b = 1; b <= 4; ++b) at_least("blocks=" + std::to_string(b), 0.15);
  at_least("upstream shape", 0.35);
  at_least("out wrapped", 0.7);
  at_least("ac", 0.5);
  at_least("depth 3", 0.05);
  at_least("explicit lists", 0.25);
  at_least("empty list", 0.03);
  at_least("[self] list", 0.03);
  at_least("torchtitan-like", 0.1);
  at_least("hsdp", 0.2);
  at_least("experts mesh", 0.1);
  at_least("shard_dim 1", 0.02);
  at_least("int reshard", 0.1);
  at_least("frozen", 0.1);
  at_least("adamw", 0.15);
  at_least("mlp block", 0.1);
  at_least("reentrant block", 0.1);
  for (const char* sub : {".attn", ".moe.router", ".mlp.fc1", ".mlp.fc2", ".mlp"})
    at_least(std::string("wrapped ") + sub, 0.02);
  // Most scenarios still have no explicit list at all.
  EXPECT_GT(count["explicit lists"], 0);
  EXPECT_LT(count["explicit lists"], kDraws / 2);
}

}  // namespace
}  // namespace shardfuzz::fuzz
