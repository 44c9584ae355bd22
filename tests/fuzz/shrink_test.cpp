// The shrink driver (fuzz/shrink/shrink.h) with a synthetic failure, over generated shrink trees
// (gen::scenario) and hand-written ones (shrinkable_from, the catalogue of named edits): both
// reach the same minimal scenario; the budget stops the driver; only failures with the original
// identity are accepted; accepted steps are named by their edit.
#include "fuzz/shrink/shrink.h"

#include "fuzz/shrink/edits.h"

#include "fuzz/campaign/campaign.h"

#include "fuzz/gen/generate.h"
#include "harness/scenario/scenario_json.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace shardfuzz::fuzz {
namespace {

using harness::BlockSpec;
using harness::Scenario;
using harness::ShardSpec;

// Fails iff some block is a gated MoE under AC whose experts are fully_shard-ed, and the head is
// fully_shard-ed: the shape of the upstream seed leak.
std::optional<std::string> synthetic(const Scenario& sc) {
  if (!sc.fully_shard.count("out")) return std::nullopt;
  for (std::size_t i = 0; i < sc.blocks.size(); ++i) {
    const BlockSpec& b = sc.blocks[i];
    if (b.kind == BlockSpec::Kind::Moe && b.gated && b.ac != ac::CheckpointMode::None &&
        sc.fully_shard.count("layers." + std::to_string(i) + ".moe.experts"))
      return std::string("synthetic-leak");
  }
  return std::nullopt;
}

// The one minimal scenario for `synthetic`, with the identity fields (name, seed, profile) of `like`.
Scenario minimal_like(const Scenario& like, bool generated = true) {
  Scenario m = like;  // fields the shrinkers leave alone (name, seed, profile, inputs, ...) stay
  m.world_size = 1;
  m.expert_shard_size = 0;
  m.steps = 1;
  m.dims = {4, 4, 1, 2};
  if (!generated) {  // the structural shrinker leaves these as the file has them
    m.dims.vocab = like.dims.vocab;
    m.dims.lora_rank = like.dims.lora_rank;
  }
  m.optimizer = {};
  // The scenario-level switches shrink to their first (simplest) value.
  if (generated) m.input_requires_grad = false, m.dims.vocab = 8, m.dims.lora_rank = 1;
  m.embed = false;
  m.final_norm = false;
  m.expert_parallel = false;
  m.micro_batches = 1;
  m.forwards_per_backward = 1;
  m.eval_forward = false;
  m.dtype = "float32";
  m.mixed_precision.reset();
  BlockSpec b;
  b.kind = BlockSpec::Kind::Moe;
  b.gated = true;
  b.ac = ac::CheckpointMode::NonReentrant;
  b.frozen = false;
  m.blocks = {b};
  m.fully_shard = {{"", ShardSpec{}}, {"layers.0.moe.experts", ShardSpec{}}, {"out", ShardSpec{}}};
  return m;
}

std::vector<uint64_t> failing_seeds(const GenConfig& config, int wanted, std::size_t min_blocks) {
  std::vector<uint64_t> seeds;
  for (uint64_t seed = 0; seeds.size() < static_cast<std::size_t>(wanted) && seed < 100000; ++seed) {
    const Scenario sc = generate(config, seed, 100);
    if (sc.blocks.size() >= min_blocks && synthetic(sc)) seeds.push_back(seed);
  }
  return seeds;
}

// Shrinking the generator's own tree reaches the minimal form from every one of 25 large failing
// draws: 1 block, world 1, only the AC the failure needs, only the required fully_shard entries
// with default options, no lists, 1 step, the smallest dims.
TEST(Shrink, GeneratedTreeReachesTheMinimum) {
  const GenConfig config;
  const auto seeds = failing_seeds(config, 25, 3);
  ASSERT_EQ(seeds.size(), 25u);
  int tried = 0, accepted = 0, skipped = 0, unchanged = 0, most = 0;
  for (uint64_t seed : seeds) {
    const auto start = generate_shrinkable(config, seed, 100);
    // Each accepted step keeps or lowers the block count and the fully_shard group count.
    std::size_t blocks = start.value().blocks.size(), groups = start.value().fully_shard.size();
    const ShrinkResult r = shrink(start, synthetic, ShrinkBudget{100000, 120.0}, [&](const ShrinkStep& step) {
      EXPECT_LE(step.scenario.blocks.size(), blocks) << "seed " << seed;
      EXPECT_LE(step.scenario.fully_shard.size(), groups) << "seed " << seed << " step " << step.accepted;
      blocks = step.scenario.blocks.size();
      groups = step.scenario.fully_shard.size();
    });
    tried += r.steps_tried;
    accepted += r.steps_accepted;
    skipped += r.skipped;
    unchanged += r.unchanged_steps;
    most = std::max(most, r.steps_tried);
    EXPECT_TRUE(r.reproduced);
    EXPECT_EQ(r.failure, "synthetic-leak");
    EXPECT_FALSE(r.budget_exhausted);
    EXPECT_GT(r.steps_accepted, 0);
    EXPECT_EQ(harness::to_json_text(r.minimal), harness::to_json_text(minimal_like(start.value())))
        << "seed " << seed << " from\n"
        << harness::to_json_text(start.value());
  }
  std::cout << "  per shrink: " << accepted / 25.0 << " accepted of " << tried / 25.0 << " tried (at most " << most
            << "), " << skipped / 25.0 << " skipped, " << unchanged / 25.0 << " taken unchanged\n";
}

// With the world pinned, shrinking never changes it.
TEST(Shrink, PinnedWorldIsKept) {
  GenConfig config;
  config.world = 4;
  const auto seeds = failing_seeds(config, 5, 2);
  ASSERT_EQ(seeds.size(), 5u);
  for (uint64_t seed : seeds) {
    const auto start = generate_shrinkable(config, seed, 100);
    const ShrinkResult r = shrink(start, synthetic, ShrinkBudget{100000, 120.0});
    Scenario expected = minimal_like(start.value());
    expected.world_size = 4;
    EXPECT_EQ(harness::to_json_text(r.minimal), harness::to_json_text(expected));
  }
}

// A large scenario written by hand: 4 blocks of every kind, world 8 with HSDP experts, every
// module wrapped, int reshard, Shard(1), explicit lists everywhere, reentrant AC, frozen, AdamW.
Scenario hand_made_large() {
  Scenario sc;
  sc.name = "hand-made";
  sc.seed = 7;
  sc.profile = semantics::Profile::named("torch-2.9");
  sc.world_size = 8;
  sc.expert_shard_size = 4;
  sc.steps = 3;
  sc.dims = {16, 12, 4, 8};
  sc.optimizer.kind = train::OptimizerConfig::Kind::AdamW;
  sc.optimizer.weight_decay = 0.01;
  for (int i = 0; i < 4; ++i) {
    BlockSpec b;
    b.kind = i == 1 ? BlockSpec::Kind::Mlp : BlockSpec::Kind::Moe;
    b.gated = i != 3;
    b.ac = i == 0 ? ac::CheckpointMode::None : ac::CheckpointMode::Reentrant;
    b.frozen = i == 2;
    sc.blocks.push_back(b);
  }
  for (const std::string& path : sc.module_paths()) {
    ShardSpec s;
    s.reshard_after_forward = fsdp::ReshardAfterForward::ranks(2);
    if (path.size() > 12 && path.compare(path.size() - 12, 12, ".moe.experts") == 0) {
      s.mesh = "experts";
      s.shard_dim = 1;
      s.backward_prefetch = std::vector<std::string>{"self"};
    }
    sc.fully_shard[path] = s;
  }
  sc.fully_shard["layers.0"].forward_prefetch = std::vector<std::string>{"layers.1", "layers.2.moe.experts"};
  sc.fully_shard["layers.2"].backward_prefetch = std::vector<std::string>{"layers.1", "layers.0.moe.experts"};
  sc.fully_shard["layers.3"].forward_prefetch = std::vector<std::string>{};
  sc.fully_shard["out"].backward_prefetch = std::vector<std::string>{"layers.3", "layers.2.moe.experts"};
  return sc;
}

TEST(Shrink, HandMadeScenarioReachesTheSameMinimum) {
  const Scenario big = hand_made_large();
  ASSERT_NO_THROW(big.validate());
  ASSERT_TRUE(synthetic(big));
  std::vector<int> accepted_at;
  const ShrinkResult r = shrink(shrinkable_from(big), synthetic, ShrinkBudget{100000, 120.0},
                                [&](const ShrinkStep& step) {
                                  EXPECT_TRUE(synthetic(step.scenario));
                                  accepted_at.push_back(step.accepted);
                                });
  EXPECT_TRUE(r.reproduced);
  EXPECT_FALSE(r.budget_exhausted);
  EXPECT_EQ(harness::to_json_text(r.minimal), harness::to_json_text(minimal_like(big, false)));
  EXPECT_EQ(static_cast<int>(accepted_at.size()), r.steps_accepted);
  for (std::size_t k = 0; k < accepted_at.size(); ++k) EXPECT_EQ(accepted_at[k], static_cast<int>(k) + 1);
  std::cout << "  hand-made: " << r.steps_accepted << " accepted of " << r.steps_tried << " tried, " << r.skipped
            << " skipped, " << r.elapsed_seconds << " s\n";
}

// Shrinking by the catalogue takes the same steps as shrinking its tree (shrinkable_from), and
// names each by its edit and what it changed.
TEST(Shrink, CatalogueStepsAreNamedAndMatchTheTree) {
  const Scenario big = hand_made_large();
  std::vector<std::string> tree_steps, named_steps, edits;
  const ShrinkResult tree = shrink(shrinkable_from(big), synthetic, ShrinkBudget{100000, 120.0},
                                   [&](const ShrinkStep& step) { tree_steps.push_back(harness::to_json_text(step.scenario)); });
  const ShrinkResult named = shrink(big, StructuralShrinkOptions{}, synthetic, ShrinkBudget{100000, 120.0},
                                    [&](const ShrinkStep& step) {
                                      named_steps.push_back(harness::to_json_text(step.scenario));
                                      edits.push_back(step.edit);
                                    });
  EXPECT_EQ(named_steps, tree_steps);
  EXPECT_EQ(named.steps_tried, tree.steps_tried);
  EXPECT_EQ(named.skipped, tree.skipped);
  EXPECT_EQ(harness::to_json_text(named.minimal), harness::to_json_text(tree.minimal));
  ASSERT_FALSE(edits.empty());
  // The cheapest candidates go first (Search::cost): the world of 8 ranks shrinks before the blocks.
  EXPECT_EQ(edits.front().rfind("smaller world (", 0), 0u) << edits.front();
  std::set<std::string> names;
  for (const auto& edit : shrinking::catalogue()) names.insert(edit.name);
  for (const std::string& e : edits) EXPECT_TRUE(names.count(e.substr(0, e.find(" ("))) > 0) << e;
}

TEST(Shrink, CatalogueNamesAreDistinctAndKeepWorldLeavesTheWorldAlone) {
  const auto all = shrinking::catalogue();
  const auto kept = shrinking::catalogue(StructuralShrinkOptions{true});
  std::set<std::string> names;
  for (const auto& edit : all) EXPECT_TRUE(names.insert(edit.name).second) << edit.name;
  EXPECT_EQ(kept.size() + 1, all.size());
  for (const auto& edit : kept) EXPECT_STRNE(edit.name, "smaller world");
  for (const auto& c : shrinking::structural_candidates(hand_made_large(), StructuralShrinkOptions{true}))
    EXPECT_EQ(c.value.world_size, 8) << c.edit;
}

TEST(Shrink, DescribeChangeNamesWhatChanged) {
  const Scenario big = hand_made_large();
  Scenario s = big;
  s.world_size = 4;
  s.dims.dim = 8;
  EXPECT_EQ(shrinking::describe_change(big, s), "dims.dim 16 -> 8, world_size 8 -> 4");
  s = big;
  s.fully_shard["layers.0"].mesh = "experts";
  s.blocks.pop_back();
  EXPECT_EQ(shrinking::describe_change(big, s), "blocks 4 -> 3, fully_shard[layers.0].mesh dp -> experts");
  EXPECT_EQ(shrinking::describe_change(big, big), "no change");
}

TEST(Shrink, HandMadeKeepWorld) {
  const ShrinkResult r =
      shrink(shrinkable_from(hand_made_large(), StructuralShrinkOptions{true}), synthetic, ShrinkBudget{100000, 120.0});
  Scenario expected = minimal_like(hand_made_large(), false);
  expected.world_size = 8;
  EXPECT_EQ(harness::to_json_text(r.minimal), harness::to_json_text(expected));
}

TEST(Shrink, StructuralShrinksValidateAndDiffer) {
  const Scenario big = hand_made_large();
  const std::string text = harness::to_json_text(big);
  const auto children = structural_shrinks(big);
  EXPECT_GT(children.size(), 50u);
  std::set<std::string> distinct;
  for (const Scenario& c : children) {
    EXPECT_NO_THROW(c.validate());
    const std::string t = harness::to_json_text(c);
    EXPECT_NE(t, text);
    distinct.insert(t);
  }
  EXPECT_EQ(distinct.size(), children.size());
}

TEST(Shrink, DroppingABlockRenumbersEntriesAndLists) {
  const Scenario big = hand_made_large();
  // The first single-block drop of block 1 (the MLP block) in the children list.
  const auto children = structural_shrinks(big);
  const Scenario* dropped1 = nullptr;
  for (const Scenario& c : children)
    if (c.blocks.size() == 3 && c.blocks[1].kind == BlockSpec::Kind::Moe && c.blocks[0].ac == ac::CheckpointMode::None &&
        c.blocks[1].frozen) {
      dropped1 = &c;
      break;
    }
  ASSERT_NE(dropped1, nullptr);
  const auto& fs = dropped1->fully_shard;
  EXPECT_TRUE(fs.count("layers.1.moe.experts"));   // was layers.2.moe.experts
  EXPECT_TRUE(fs.count("layers.2.moe.experts"));   // was layers.3.moe.experts
  EXPECT_FALSE(fs.count("layers.3"));
  EXPECT_FALSE(fs.count("layers.1.mlp"));
  // layers.0 prefetched [layers.1 (dropped), layers.2.moe.experts] -> [layers.1.moe.experts].
  EXPECT_EQ(*fs.at("layers.0").forward_prefetch, std::vector<std::string>{"layers.1.moe.experts"});
  // layers.2 (now layers.1) prefetched [layers.1 (dropped), layers.0.moe.experts] backward.
  EXPECT_EQ(*fs.at("layers.1").backward_prefetch, std::vector<std::string>{"layers.0.moe.experts"});
  EXPECT_EQ(*fs.at("out").backward_prefetch, (std::vector<std::string>{"layers.2", "layers.1.moe.experts"}));
}

TEST(Shrink, OnlyTheSameFailureIsAccepted) {
  const auto start = generate_shrinkable(GenConfig{}, 3, 100);
  const std::string original = harness::to_json_text(start.value());
  // Every child fails, but differently.
  const ShrinkResult r = shrink(start, [&](const Scenario& sc) -> std::optional<std::string> {
    return harness::to_json_text(sc) == original ? "A" : "B";
  }, ShrinkBudget{50, 60.0});
  EXPECT_TRUE(r.reproduced);
  EXPECT_EQ(r.failure, "A");
  EXPECT_EQ(r.steps_accepted, 0);
  EXPECT_EQ(harness::to_json_text(r.minimal), original);
}

TEST(Shrink, AStartThatPassesIsReported) {
  int calls = 0;
  const ShrinkResult r = shrink(generate_shrinkable(GenConfig{}, 5, 100), [&](const Scenario&) -> std::optional<std::string> {
    ++calls;
    return std::nullopt;
  }, ShrinkBudget{});
  EXPECT_FALSE(r.reproduced);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(r.steps_tried, 1);
}

TEST(Shrink, StepBudgetStopsTheDriver) {
  int calls = 0;
  auto always = [&](const Scenario&) -> std::optional<std::string> {
    ++calls;
    return std::string("always");
  };
  const ShrinkResult r = shrink(shrinkable_from(hand_made_large()), always, ShrinkBudget{5, 60.0});
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_EQ(r.steps_tried, 5);
  EXPECT_EQ(calls, 5);  // the start value's run included
  EXPECT_EQ(r.steps_accepted, 4);

  // A known failure saves the first run; a budget of 0 runs nothing.
  calls = 0;
  const ShrinkResult none = shrink(shrinkable_from(hand_made_large()), always, ShrinkBudget{0, 60.0}, {}, "always");
  EXPECT_TRUE(none.budget_exhausted);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(harness::to_json_text(none.minimal), harness::to_json_text(hand_made_large()));
}

TEST(Shrink, TimeBudgetStopsTheDriver) {
  auto slow = [](const Scenario&) -> std::optional<std::string> {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return std::string("slow");
  };
  const ShrinkResult r = shrink(shrinkable_from(hand_made_large()), slow, ShrinkBudget{100000, 0.2}, {}, "slow");
  // The time budget, not the step budget, stopped it: a few 20 ms calls (how many depends on the
  // machine's load: not asserted from below beyond one), never more than 0.2 s of them, and it
  // stops at the first check past the budget.
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_GE(r.steps_tried, 1);
  EXPECT_LE(r.steps_tried, 12);
  EXPECT_LT(r.elapsed_seconds, 1.0);
}

}  // namespace
}  // namespace shardfuzz::fuzz

namespace shardfuzz::fuzz {
namespace {

// The seed leak regenerated with routed top-k MoE and expert parallelism: 8 checkpointed blocks,
// world 4 = ep 2 x dp_mod_ep 2, each block and its EP-local experts (on dp_mod_ep) fully_shard-ed,
// a wrapped head, no explicit lists (the report's layout). Under torch-2.9 it leaks; shrinking
// with the world kept reaches one block, its nested experts and the head.
TEST(Shrink, SeedLeakWithRoutedMoeAndExpertParallelShrinksToOneBlock) {
  Scenario sc;
  sc.name = "seed leak, routed MoE + EP";
  sc.seed = 7;
  sc.world_size = 4;
  sc.expert_shard_size = 2;
  sc.expert_parallel = true;
  sc.profile = semantics::Profile::named("torch-2.9");
  sc.dims.dim = 16;
  sc.dims.hidden = 16;
  sc.dims.experts = 4;
  sc.dims.tokens = 8;
  sc.dims.top_k = 2;
  for (int i = 0; i < 8; ++i) {
    BlockSpec b;
    b.kind = BlockSpec::Kind::RoutedMoe;
    b.ac = ac::CheckpointMode::NonReentrant;
    sc.blocks.push_back(b);
    sc.fully_shard["layers." + std::to_string(i)] = ShardSpec{};
    ShardSpec experts;
    experts.mesh = "experts";
    sc.fully_shard["layers." + std::to_string(i) + ".moe.experts"] = experts;
  }
  sc.fully_shard["out"] = ShardSpec{};
  sc.fully_shard[""] = ShardSpec{};
  ASSERT_NO_THROW(sc.validate());
  auto fails = [](const Scenario& s) { return first_failing_property(s); };
  ASSERT_EQ(fails(sc).value_or("pass"), "per_layer_return_to_baseline");
  const ShrinkResult r = shrink(shrinkable_from(sc, StructuralShrinkOptions{true}), fails, ShrinkBudget{400, 120.0});
  ASSERT_TRUE(r.reproduced);
  EXPECT_EQ(r.minimal.blocks.size(), 1u) << harness::to_json_text(r.minimal);
  EXPECT_EQ(r.minimal.world_size, 4);
  EXPECT_TRUE(r.minimal.fully_shard.count("layers.0.moe.experts")) << harness::to_json_text(r.minimal);
}

}  // namespace
}  // namespace shardfuzz::fuzz

namespace shardfuzz::fuzz {
namespace {

// A schedule-dependent failure: decisions 7 and 40 must switch (to any other candidate), as a race
// between two ranks needs both of its preemptions.
std::optional<std::string> needs_switches_7_and_40(const Scenario& sc) {
  if (!sc.schedule) return std::nullopt;
  int found = 0;
  for (const auto& s : sc.schedule->switches) found += s.decision == 7 || s.decision == 40;
  return found == 2 ? std::optional<std::string>("race") : std::nullopt;
}

// 22 switches, among them the two the failure needs.
harness::ScheduleSpec many_switches(uint64_t seed) {
  harness::ScheduleSpec schedule;
  schedule.seed = seed;
  for (int64_t d = 0; d < 60; d += 3) schedule.switches.push_back({d, d % 2 ? 2 : 3});
  schedule.switches.push_back({7, 2});
  schedule.switches.push_back({40, 3});
  std::sort(schedule.switches.begin(), schedule.switches.end(),
            [](const auto& a, const auto& b) { return a.decision < b.decision; });
  return schedule;
}

// A schedule-dependent failure keeps only the switches it needs.
TEST(Shrink, ScheduleShrinksToTheSwitchesTheFailureNeeds) {
  Scenario big = hand_made_large();
  big.schedule = many_switches(12345);
  ASSERT_NO_THROW(big.validate());
  const auto needs = needs_switches_7_and_40;
  std::vector<std::string> edits;
  const ShrinkResult r = shrink(big, StructuralShrinkOptions{}, needs, ShrinkBudget{100000, 120.0},
                                [&](const ShrinkStep& step) { edits.push_back(step.edit); });
  ASSERT_TRUE(r.reproduced);
  ASSERT_TRUE(r.minimal.schedule);
  EXPECT_EQ(r.minimal.schedule->seed, 0u) << "the draws are dropped";
  ASSERT_EQ(r.minimal.schedule->switches.size(), 2u);
  EXPECT_EQ(r.minimal.schedule->switches[0].decision, 7);
  EXPECT_EQ(r.minimal.schedule->switches[1].decision, 40);
  EXPECT_EQ(r.minimal.schedule->switches[0].candidate, 1) << "each switch goes to the nearest other candidate";
  EXPECT_EQ(r.minimal.schedule->switches[1].candidate, 1);
  EXPECT_TRUE(std::any_of(edits.begin(), edits.end(), [](const std::string& e) { return e.find("fewer switches") == 0; }))
      << ::testing::PrintToString(edits);
}

TEST(Shrink, AScheduleTheFailureDoesNotNeedIsDropped) {
  Scenario big = hand_made_large();
  big.schedule = harness::ScheduleSpec{99, {{3, 1}, {9, 2}}};
  const ShrinkResult r = shrink(big, StructuralShrinkOptions{}, synthetic, ShrinkBudget{100000, 120.0}, {});
  ASSERT_TRUE(r.reproduced);
  EXPECT_FALSE(r.minimal.schedule) << "the canonical schedule is the simplest";
}

// A campaign shrinks a generator's tree with the failing case's pinned switches
// (with_schedule_shrinks): the schedule reaches the same two switches while the tree shrinks the rest.
TEST(Shrink, AGeneratorTreeShrinksItsPinnedScheduleToo) {
  const Scenario big = hand_made_large();
  const ShrinkResult r = shrink(with_schedule_shrinks(shrinkable_from(big), many_switches(0)), needs_switches_7_and_40,
                                ShrinkBudget{100000, 120.0});
  ASSERT_TRUE(r.reproduced);
  ASSERT_TRUE(r.minimal.schedule);
  ASSERT_EQ(r.minimal.schedule->switches.size(), 2u);
  EXPECT_EQ(r.minimal.schedule->switches[0].decision, 7);
  EXPECT_EQ(r.minimal.schedule->switches[1].decision, 40);
  EXPECT_LT(r.minimal.blocks.size(), big.blocks.size()) << "the tree's own shrinks still ran";
}

}  // namespace
}  // namespace shardfuzz::fuzz
