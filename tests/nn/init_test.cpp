// nn::Init's draws: the same seed gives the same stream whether a draw is made or copied from the
// process's recent draws, an Init that copies goes on drawing where the drawing one went on,
// threads drawing one model at once draw it once, and only the few most recently used seeds' draws
// are kept.
#include "runtime/nn/init.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace shardfuzz::nn {
namespace {

// What a generator of `seed` gives for these draws, one after another, with no cache at all.
std::vector<at::Tensor> uncached(uint64_t seed, const std::vector<std::vector<int64_t>>& sizes, double std) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<at::Tensor> out;
  for (const auto& s : sizes) out.push_back(at::randn(s, gen, at::TensorOptions().dtype(at::kFloat)) * std);
  return out;
}

TEST(Init, ACopiedDrawAndTheDrawsAfterItEqualAStreamThatWasNeverCached) {
  constexpr uint64_t kSeed = 0x5eed1234;
  Init first(kSeed);
  const at::Tensor a = first.normal({4, 4}, 0.5);
  const at::Tensor b = first.normal({3}, 0.5);
  const auto before = draw_cache_counts();
  Init second(kSeed);
  const at::Tensor a2 = second.normal({4, 4}, 0.5);  // copied
  const at::Tensor c = second.normal({2, 2}, 0.5);   // a new draw: the stream must go on after a
  EXPECT_EQ(draw_cache_counts().served - before.served, 1);
  EXPECT_EQ(draw_cache_counts().drawn - before.drawn, 1);
  const auto want_ab = uncached(kSeed, {{4, 4}, {3}}, 0.5);
  const auto want_ac = uncached(kSeed, {{4, 4}, {2, 2}}, 0.5);
  EXPECT_TRUE(at::equal(a, want_ab[0]));
  EXPECT_TRUE(at::equal(b, want_ab[1]));
  EXPECT_TRUE(at::equal(a2, want_ac[0]));
  EXPECT_TRUE(at::equal(c, want_ac[1]));
  EXPECT_NE(a2.data_ptr(), a.data_ptr()) << "each caller gets its own copy";
  a2.add_(1.0);
  Init third(kSeed);
  EXPECT_TRUE(at::equal(third.normal({4, 4}, 0.5), want_ab[0])) << "a caller's copy is not the kept draw";
}

TEST(Init, ADrawAfterADifferentFirstDrawIsNotTakenFromAnotherStream) {
  // Same seed, same second draw, different first draw (a shrunk width): the second draw depends on
  // where the first left the generator, so it must not be copied from the other model's.
  constexpr uint64_t kSeed = 0x5eed9abc;
  Init wide(kSeed);
  wide.normal({4, 4}, 0.5);
  const at::Tensor after_wide = wide.normal({3}, 0.5);
  Init narrow(kSeed);
  narrow.normal({2, 2}, 0.5);
  const at::Tensor after_narrow = narrow.normal({3}, 0.5);
  EXPECT_TRUE(at::equal(after_wide, uncached(kSeed, {{4, 4}, {3}}, 0.5)[1]));
  EXPECT_TRUE(at::equal(after_narrow, uncached(kSeed, {{2, 2}, {3}}, 0.5)[1]));
}

TEST(Init, RanksDrawingOneModelAtOnceDrawItOnce) {
  constexpr uint64_t kSeed = 0x5eed5678;
  constexpr int kRanks = 8;
  const auto before = draw_cache_counts();
  std::vector<std::vector<at::Tensor>> got(kRanks);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r)
    ranks.emplace_back([&, r] {
      Init init(kSeed);
      for (int i = 0; i < 5; ++i) got[static_cast<std::size_t>(r)].push_back(init.normal({16, 8}, 0.1));
    });
  for (auto& t : ranks) t.join();
  const auto after = draw_cache_counts();
  EXPECT_EQ(after.drawn - before.drawn, 5);
  EXPECT_EQ(after.served - before.served, 5 * (kRanks - 1));
  const auto want = uncached(kSeed, std::vector<std::vector<int64_t>>(5, {16, 8}), 0.1);
  for (int r = 0; r < kRanks; ++r)
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(at::equal(got[r][i], want[i])) << "rank " << r << " draw " << i;
}

// Served (true) or drawn (false): whether a fresh Init of `seed` found its first {8, 8} draw kept.
bool kept(uint64_t seed) {
  const auto before = draw_cache_counts();
  Init(seed).normal({8, 8}, 1.0);
  return draw_cache_counts().served - before.served == 1;
}

TEST(Init, OnlyTheMostRecentlyUsedSeedsDrawsAreKept) {
  // A campaign draws a new seed every case; past cases' draws are never served again, and keeping
  // them fragments the rank threads' heaps. Seeds 1..4 in turn, then 1 used again: 2 is the least
  // recently used, so a fifth seed drops 2's draws and keeps 1's.
  constexpr uint64_t kBase = 0x5eed0000;
  for (uint64_t i = 1; i <= 4; ++i) EXPECT_FALSE(kept(kBase + i)) << "seed " << i << " is new";
  EXPECT_TRUE(kept(kBase + 1));
  EXPECT_FALSE(kept(kBase + 5));
  EXPECT_TRUE(kept(kBase + 1)) << "used since 2 was, so kept";
  EXPECT_FALSE(kept(kBase + 2)) << "the least recently used seed's draws were dropped";
  // Drawn again, its draw equals the stream's all the same.
  EXPECT_TRUE(at::equal(Init(kBase + 2).normal({8, 8}, 1.0), uncached(kBase + 2, {{8, 8}}, 1.0)[0]));
}

TEST(Init, AStreamKeptAsTheModelsSeedNeitherCountsAsASeedNorDropsTheModelsDraws) {
  // A LoRA adapter draws from a stream of its own inside the model: many adapters must not push
  // the model's own draws out.
  constexpr uint64_t kModel = 0x5eedaaaa;
  EXPECT_FALSE(kept(kModel));
  for (uint64_t adapter = 1; adapter <= 8; ++adapter) Init(kModel ^ (adapter << 20), false, kModel).normal({2, 8}, 1.0);
  EXPECT_TRUE(kept(kModel));
  const auto before = draw_cache_counts();
  Init(kModel ^ (3 << 20), false, kModel).normal({2, 8}, 1.0);
  EXPECT_EQ(draw_cache_counts().served - before.served, 1) << "the adapter's draw is kept with the model's";
}

}  // namespace
}  // namespace shardfuzz::nn
