// Coverage guidance (issue 23, item 4): structure-aware mutants are valid, differ from their
// parent, keep what the campaign pinned and are reproducible from the seed; the edge map counts
// edges once, sees the hits of a forked child (the persistent worker) and clears per case; a
// guided campaign replays the corpus it finds first and spends about half of the rest on mutants.
// The hook is called by hand here: the test binary's runtime carries no instrumentation.
#include "fuzz/campaign/campaign.h"
#include "fuzz/coverage/edge_map.h"
#include "fuzz/campaign/guidance.h"
#include "fuzz/gen/generate.h"
#include "fuzz/mutate/mutate.h"
#include "harness/files/temp_dir.h"
#include "harness/files/write_file.h"
#include "harness/scenario/scenario_json.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

namespace shardfuzz::fuzz {
namespace {

TEST(Mutate, MutantsAreValidDifferentReproducibleAndKeepWhatIsPinned) {
  GenConfig config;
  config.profile = "strict";
  std::set<std::string> kinds;
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    const harness::Scenario parent = generate(config, seed, 60);
    const Mutant m = mutate(parent, seed * 7, config);
    EXPECT_NO_THROW(m.scenario.validate()) << harness::to_json_text(m.scenario);
    EXPECT_NE(harness::to_json_text(m.scenario), harness::to_json_text(parent));
    EXPECT_EQ(m.scenario.profile.name, "strict");
    EXPECT_EQ(harness::to_json_text(mutate(parent, seed * 7, config).scenario), harness::to_json_text(m.scenario));
    ASSERT_FALSE(m.edits.empty());
    for (const auto& e : m.edits) kinds.insert(e.substr(0, e.find(" (")));
  }
  // Every kind of mutation occurs in 120 mutants of 1-3 edits each.
  for (const auto& name : mutation_names()) EXPECT_TRUE(kinds.count(name)) << name << " never drawn";
  EXPECT_FALSE(kinds.count("fresh draw"));
  config.world = 4;
  for (uint64_t seed = 1; seed <= 20; ++seed)
    EXPECT_EQ(mutate(generate(config, seed, 60), seed, config).scenario.world_size, 4);
}

// Two blocks of their own, as instrumented code has: not inlined, folded or tail-called (the hook
// reads its caller's address).
__attribute__((noipa)) void hit_a() {
  __sanitizer_cov_trace_pc();
  asm volatile("");
}
__attribute__((noipa)) void hit_b() {
  __sanitizer_cov_trace_pc();
  asm volatile("" ::: "memory");
}

TEST(EdgeMap, EdgesCountOnceAreClearedPerCaseAndSeenFromAForkedChild) {
  std::vector<uint8_t> seen;
  coverage::clear_edges();
  coverage::merge_new_edges(seen);
  const int before = coverage::count_edges(seen);
  coverage::clear_edges();
  hit_a();
  hit_b();
  const int fresh = coverage::merge_new_edges(seen);
  EXPECT_GE(fresh, 1);
  EXPECT_EQ(coverage::count_edges(seen), before + fresh);
  coverage::clear_edges();
  EXPECT_EQ(coverage::merge_new_edges(seen), 0) << "cleared: nothing new";
  hit_a();
  hit_b();
  EXPECT_EQ(coverage::merge_new_edges(seen), 1) << "b -> a is the one new edge (the thread's last block was b)";
  coverage::clear_edges();
  hit_a();
  hit_b();
  EXPECT_EQ(coverage::merge_new_edges(seen), 0) << "the same edges again are not new";
  // A child forked now (as the campaign's worker is) writes into the same map.
  coverage::clear_edges();
  const pid_t child = ::fork();
  if (child == 0) {
    for (int i = 0; i < 3; ++i) hit_b();
    hit_a();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_GE(coverage::merge_new_edges(seen), 1) << "the child's b->b edge is new to the parent";
  const auto blocks = coverage::blocks_reached();
  EXPECT_GE(blocks.size(), 2u);
}

TEST(Guidance, AGuidedCampaignReplaysItsCorpusFirstThenMutatesAboutHalfTheCases) {
  harness::TempDir dir("shardfuzz-guidance");
  GenConfig config;
  config.profile = "strict";
  const std::string corpus = dir.path() + "/corpus";
  harness::write_file_atomically(corpus + "/last-night.json", harness::to_json_text(generate(config, 5, 40)) + "\n");
  harness::write_file_atomically(corpus + "/broken.json", "{\"world_size\": \"many\"}\n");
  std::ostringstream log;
  Guidance g(config, corpus, log);
  EXPECT_NE(log.str().find("broken.json"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("1 scenario(s) to replay first"), std::string::npos) << log.str();
  const Draw first = g.draw(11, 30);
  EXPECT_EQ(first.describe(), "replay of last-night.json");
  int mutants = 0;
  for (uint64_t k = 0; k < 200; ++k) {
    const Draw d = g.draw(case_seed(3, static_cast<int>(k)), 30);
    mutants += d.describe().rfind("mutant of last-night.json: ", 0) == 0;
    EXPECT_NO_THROW(d.shrinkable.value().validate()) << d.describe();
  }
  EXPECT_GT(mutants, 60);
  EXPECT_LT(mutants, 140);
  // New edges keep the case's scenario in the corpus folder.
  hit_a();
  hit_b();
  hit_a();
  const harness::Scenario s = generate(config, 9, 20);
  EXPECT_GT(g.merge_edges(s, 7, 12345), 0);
  std::ifstream kept(corpus + "/case-7-12345.json");
  EXPECT_TRUE(kept.good());
  EXPECT_EQ(g.merge_edges(s, 8, 12346), 0) << "nothing ran since: no new edges";
  const nlohmann::json summary = g.summary();
  EXPECT_EQ(summary["cases_by_origin"]["replayed"], 1);
  EXPECT_NE(Guidance::describe(summary).find("fuzz: coverage: "), std::string::npos);
}

}  // namespace
}  // namespace shardfuzz::fuzz
