// The shrinking building blocks of the generator (fuzz/gen/choice.h, fuzz/gen/list.h): weighted
// choices shrink toward earlier options, bounded lists never shrink below their minimum.
#include "fuzz/gen/choice.h"
#include "fuzz/gen/list.h"
#include "tests/fuzz/rc_property.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <map>

namespace shardfuzz::fuzz::gen {
namespace {

using fuzz::testing::check_property;

template <typename T>
std::vector<T> shrink_values(const rc::Shrinkable<T>& s) {
  std::vector<T> out;
  auto seq = s.shrinks();
  while (auto c = seq.next()) out.push_back(c->value());
  return out;
}

TEST(GenChoice, WeightsBiasGeneration) {
  const auto g = weighted_choice<int>({{1, 10}, {3, 20}, {0, 30}});
  std::map<int, int> seen;
  for (uint64_t seed = 0; seed < 4000; ++seed) seen[g(rc::Random(seed), 0).value()]++;
  EXPECT_EQ(seen.count(30), 0u);  // weight 0: never drawn
  EXPECT_NEAR(seen[20] / 4000.0, 0.75, 0.04);
}

TEST(GenChoice, ShrinksTowardEarlierOptions) {
  const auto g = weighted_choice<int>({{0, 10}, {0, 20}, {0, 30}, {1, 40}});
  const auto s = g(rc::Random(1), 0);
  ASSERT_EQ(s.value(), 40);
  EXPECT_EQ(shrink_values(s), (std::vector<int>{10, 30}));  // rc::shrink::towards on the index
  // Weight-0 options are still reachable by shrinking.
  auto seq = s.shrinks();
  seq.next();
  EXPECT_EQ(shrink_values(*seq.next()), (std::vector<int>{10, 20}));
}

TEST(GenChoice, FlagShrinksToFalse) {
  const auto s = flag(0, 1)(rc::Random(3), 0);
  EXPECT_TRUE(s.value());
  EXPECT_EQ(shrink_values(s), std::vector<bool>{false});
  EXPECT_TRUE(shrink_values(flag(1, 0)(rc::Random(3), 0)).empty());
}

TEST(GenChoice, OneOfShrinksTowardEarlierGenerators) {
  const auto g = weighted_one_of<int>({{0, rc::gen::just(1)}, {1, weighted_choice<int>({{0, 5}, {1, 6}})}});
  const auto s = g(rc::Random(9), 0);
  ASSERT_EQ(s.value(), 6);
  EXPECT_EQ(shrink_values(s), (std::vector<int>{1, 5}));
}

// Property "bounded lists stay within bounds, through every shrink", generator bounded_vector.
TEST(GenList, BoundedVectorStaysInBoundsWhenShrunk) {
  check_property("bounded_vector bounds", 300, 3, [] {
    const auto lo = *rc::gen::inRange<std::size_t>(0, 3);
    const auto hi = lo + *rc::gen::inRange<std::size_t>(0, 4);
    const auto s = bounded_vector<int>(lo, hi, weighted_choice<int>({{1, 0}, {1, 1}, {1, 2}}))(
        rc::Random(*rc::gen::arbitrary<uint64_t>()), 50);
    RC_ASSERT(s.value().size() >= lo);
    RC_ASSERT(s.value().size() <= hi);
    // Walk the shrink tree's first-child path and every child of the root.
    auto root = s.shrinks();
    while (auto c = root.next()) RC_ASSERT(c->value().size() >= lo);
    rc::Shrinkable<std::vector<int>> cur = s;
    for (;;) {
      auto seq = cur.shrinks();
      auto first = seq.next();
      if (!first) break;
      RC_ASSERT(first->value().size() >= lo);
      cur = *first;
    }
    // The end of the first-child path: the minimum length, all zeros.
    RC_ASSERT(cur.value() == std::vector<int>(lo, 0));
  });
}

TEST(GenList, BoundedVectorDropsLargestChunksFirst) {
  const auto g = bounded_vector<int>(1, 4, weighted_choice<int>({{0, 0}, {1, 7}}));
  for (uint64_t seed = 0;; ++seed) {
    const auto s = g(rc::Random(seed), 50);
    if (s.value().size() != 4) continue;
    const auto children = shrink_values(s);
    ASSERT_FALSE(children.empty());
    EXPECT_EQ(children.front(), std::vector<int>{7});  // drop 3 of 4 first
    break;
  }
}

TEST(GenList, SequenceShrinksElementwiseInOrder) {
  const auto s = sequence<bool>({flag(0, 1), flag(0, 1)})(rc::Random(0), 0);
  EXPECT_EQ(s.value(), (std::vector<bool>{true, true}));
  EXPECT_EQ(shrink_values(s), (std::vector<std::vector<bool>>{{false, true}, {true, false}}));
}

}  // namespace
}  // namespace shardfuzz::fuzz::gen
