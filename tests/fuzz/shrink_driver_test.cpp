// The generic budgeted greedy shrinker (fuzz/shrink/driver.h) on plain values: an integer and a
// vector<int>, with named edits, a failure identity, the budget in runs and seconds.
#include "fuzz/shrink/driver.h"

#include <rapidcheck/seq/Create.h>

#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

namespace shardfuzz::fuzz::shrinking {
namespace {

// Integers shrink to 0, then to half, then to one less.
Search<int> integers() {
  Search<int> s;
  s.candidates = [](const int& v) {
    std::vector<Candidate<int>> out;
    if (v > 0) out.push_back({0, "zero"});
    if (v / 2 > 0) out.push_back({v / 2, "halve"});
    if (v > 0) out.push_back({v - 1, "decrement"});
    return rc::seq::fromContainer(std::move(out));
  };
  s.key = [](const int& v) { return std::to_string(v); };
  return s;
}

TEST(ShrinkDriver, ShrinksAnIntegerToTheSmallestFailingValue) {
  Search<int> search = integers();
  std::vector<std::string> edits;
  std::vector<int> values;
  search.progress = [&](const Step<int>& step) {
    edits.push_back(step.edit);
    values.push_back(step.value);
    EXPECT_EQ(step.accepted, static_cast<int>(values.size()));
  };
  const Fails<int> at_least_37 = [](const int& v) { return v >= 37 ? std::optional<std::string>("big") : std::nullopt; };
  const Outcome<int> o = greedy(1000, search, at_least_37, Budget{});
  EXPECT_TRUE(o.reproduced);
  EXPECT_EQ(o.failure, "big");
  EXPECT_EQ(o.minimal, 37);
  EXPECT_FALSE(o.budget_exhausted);
  EXPECT_EQ(o.accepted, static_cast<int>(values.size()));
  EXPECT_EQ(values.front(), 500);
  EXPECT_EQ(edits.front(), "halve");
  EXPECT_EQ(edits.back(), "decrement");
  EXPECT_EQ(values.back(), 37);
}

TEST(ShrinkDriver, ShrinksAVectorByNamedEdits) {
  Search<std::vector<int>> search;
  search.candidates = [](const std::vector<int>& v) {
    std::vector<Candidate<std::vector<int>>> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      auto w = v;
      w.erase(w.begin() + static_cast<long>(i));
      out.push_back({w, "drop element " + std::to_string(i)});
    }
    for (std::size_t i = 0; i < v.size(); ++i)
      if (v[i] > 0) {
        auto w = v;
        w[i] = 0;
        out.push_back({w, "zero element " + std::to_string(i)});
      }
    return rc::seq::fromContainer(std::move(out));
  };
  search.key = [](const std::vector<int>& v) {
    return std::accumulate(v.begin(), v.end(), std::string(), [](std::string a, int x) { return a + std::to_string(x) + ","; });
  };
  // Fails when the sum is at least 10: the minimum is one element of 10.
  const Fails<std::vector<int>> sum10 = [](const std::vector<int>& v) {
    return std::accumulate(v.begin(), v.end(), 0) >= 10 ? std::optional<std::string>("sum") : std::nullopt;
  };
  const auto o = greedy(std::vector<int>{3, 4, 10, 7}, search, sum10, Budget{});
  EXPECT_EQ(o.minimal, std::vector<int>{10});
  EXPECT_EQ(o.accepted, 3);
}

TEST(ShrinkDriver, OnlyTheSameIdentityIsAccepted) {
  const Fails<int> differently = [](const int& v) { return std::optional<std::string>(v == 50 ? "A" : "B"); };
  const auto o = greedy(50, integers(), differently, Budget{});
  EXPECT_EQ(o.failure, "A");
  EXPECT_EQ(o.accepted, 0);
  EXPECT_EQ(o.minimal, 50);
  EXPECT_EQ(o.tried, 4);  // the start, then 0, 25 and 49
}

TEST(ShrinkDriver, AStartThatPassesIsReported) {
  int calls = 0;
  const Fails<int> passes = [&](const int&) -> std::optional<std::string> {
    ++calls;
    return std::nullopt;
  };
  const auto o = greedy(9, integers(), passes, Budget{});
  EXPECT_FALSE(o.reproduced);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(o.minimal, 9);
}

TEST(ShrinkDriver, InadmissibleAndRepeatedCandidatesAreSkippedWithoutARun) {
  Search<int> search = integers();
  search.admissible = [](const int& v) { return v % 2 == 1; };  // only odd values may be run
  int calls = 0;
  const Fails<int> always = [&](const int&) {
    ++calls;
    return std::optional<std::string>("x");
  };
  const auto o = greedy(12, search, always, Budget{}, std::string("x"));
  // 12: 0, 6 inadmissible; 11 taken. 11: 0 skipped; 5 taken. 5: 0, 2 skipped; 4 skipped. Done.
  EXPECT_EQ(o.minimal, 5);
  EXPECT_EQ(o.accepted, 2);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(o.skipped, 6);
}

TEST(ShrinkDriver, ACandidateEqualToTheCurrentValueIsTakenWithoutARun) {
  Search<int> search;
  search.candidates = [](const int& v) {
    std::vector<Candidate<int>> out;
    if (v > 0) out.push_back({v - 1, "decrement"});
    return rc::seq::fromContainer(std::move(out));
  };
  search.key = [](const int& v) { return std::to_string(v / 10); };  // 10..19 are one value, 0..9 another
  int calls = 0;
  const Fails<int> always = [&](const int&) {
    ++calls;
    return std::optional<std::string>("x");
  };
  const auto o = greedy(19, search, always, Budget{}, std::string("x"));
  EXPECT_EQ(calls, 1);         // 9, the one new value
  EXPECT_EQ(o.accepted, 1);
  EXPECT_EQ(o.unchanged, 18);  // 19 -> 10 and 9 -> 0, each equal to the value before it
  EXPECT_EQ(o.minimal, 9);     // the last value run: the ones after it are the same value
}

TEST(ShrinkDriver, BudgetStopsTheDriver) {
  int calls = 0;
  const Fails<int> big = [&](const int& v) {
    ++calls;
    return v >= 1 ? std::optional<std::string>("big") : std::nullopt;
  };
  Search<int> search;
  search.candidates = [](const int& v) { return rc::seq::fromContainer(std::vector<Candidate<int>>{{v - 1, "decrement"}}); };
  search.key = [](const int& v) { return std::to_string(v); };
  const auto o = greedy(100, search, big, Budget{5, 60.0});
  EXPECT_TRUE(o.budget_exhausted);
  EXPECT_EQ(calls, 5);  // the start's run included
  EXPECT_EQ(o.minimal, 96);

  const Fails<int> slow = [](const int&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return std::optional<std::string>("slow");
  };
  // Runs of at least 20 ms: at most 10 start within 0.2 s (fewer on a loaded machine).
  const auto timed = greedy(1000, search, slow, Budget{100000, 0.2}, std::string("slow"));
  EXPECT_TRUE(timed.budget_exhausted);
  EXPECT_GE(timed.tried, 1);
  EXPECT_LE(timed.tried, 10);
}

// Speculative runs: `width` candidates at a time through fails_many end on the value and the
// accepted steps of the one-at-a-time descent, over several identities and budgets, and never run
// a value twice.
TEST(ShrinkDriver, WindowsOfSpeculativeRunsEndWhereOneAtATimeEnds) {
  // Fails "odd" for odd values over 40, "big" for even ones over 60: several identities, so a
  // candidate that fails differently must be passed over in a window too.
  const Fails<int> fails = [](const int& v) -> std::optional<std::string> {
    if (v > 60 && v % 2 == 0) return "big";
    if (v > 40 && v % 2 == 1) return "odd";
    return std::nullopt;
  };
  for (const int start : {1000, 999, 61, 4097}) {
    for (const int max_runs : {3, 7, 500}) {
      Search<int> one = integers();
      std::vector<int> steps_one;
      one.progress = [&](const Step<int>& s) { steps_one.push_back(s.value); };
      const Outcome<int> sequential = greedy(start, one, fails, Budget{max_runs, 600});
      for (const int width : {2, 3, 8}) {
        Search<int> many = integers();
        std::vector<int> steps_many;
        many.progress = [&](const Step<int>& s) { steps_many.push_back(s.value); };
        std::multiset<int> ran;
        int batches = 0;
        many.width = width;
        many.fails_many = [&](const std::vector<const int*>& values) {
          EXPECT_LE(static_cast<int>(values.size()), width);
          ++batches;
          std::vector<std::optional<std::string>> out;
          for (const int* v : values) {
            ran.insert(*v);
            out.push_back(fails(*v));
          }
          return out;
        };
        const Fails<int> counted = [&](const int& v) {
          ran.insert(v);
          return fails(v);
        };
        const Outcome<int> windowed = greedy(start, many, counted, Budget{max_runs, 600});
        const std::string what = "start " + std::to_string(start) + ", width " + std::to_string(width) +
                                 ", max_runs " + std::to_string(max_runs);
        EXPECT_LE(windowed.tried, max_runs) << what;
        for (const int v : ran) EXPECT_EQ(ran.count(v), 1u) << what << ": " << v << " ran twice";
        if (max_runs == 500) {
          EXPECT_EQ(windowed.minimal, sequential.minimal) << what;
          EXPECT_EQ(steps_many, steps_one) << what;
          EXPECT_EQ(windowed.failure, sequential.failure) << what;
          EXPECT_FALSE(windowed.budget_exhausted) << what;
          EXPECT_GT(batches, 0) << what;
        } else {
          // A budget cuts the windowed descent at a different place, but only on its way down.
          EXPECT_TRUE(windowed.budget_exhausted || windowed.minimal == sequential.minimal) << what;
          EXPECT_TRUE(fails(windowed.minimal) == sequential.failure || windowed.minimal == start) << what;
        }
      }
    }
  }
}

// A change rejected once (here "zero": the failure needs at least 37) goes to the back of later
// walks: fewer runs, and the walk still tries everything before it ends (the minimum is 1-minimal).
TEST(ShrinkDriver, ChangesRejectedBeforeAreTriedLast) {
  const Fails<int> at_least_37 = [](const int& v) { return v >= 37 ? std::optional<std::string>("big") : std::nullopt; };
  Search<int> plain = integers();
  Search<int> deferring = integers();
  deferring.change = [](const int& from, const int& to) {
    return to == 0 ? std::string("zero") : to == from / 2 ? std::string("halve") : std::string("decrement");
  };
  const Outcome<int> a = greedy(1000, plain, at_least_37, Budget{});
  const Outcome<int> b = greedy(1000, deferring, at_least_37, Budget{});
  EXPECT_EQ(a.minimal, 37);
  EXPECT_EQ(b.minimal, 37);
  EXPECT_LT(b.tried, a.tried);
  EXPECT_FALSE(b.budget_exhausted);
}

TEST(ShrinkDriver, CheaperCandidatesAreTriedFirst) {
  const Fails<int> at_least_37 = [](const int& v) { return v >= 37 ? std::optional<std::string>("big") : std::nullopt; };
  Search<int> decrement_first = integers();
  decrement_first.candidates = [](const int& v) {  // the dearest candidate first
    std::vector<Candidate<int>> out;
    if (v > 0) out.push_back({v - 1, "decrement"});
    if (v / 2 > 0) out.push_back({v / 2, "halve"});
    if (v > 0) out.push_back({0, "zero"});
    return rc::seq::fromContainer(std::move(out));
  };
  Search<int> cheapest_first = decrement_first;
  cheapest_first.cost = [](const int& v) { return static_cast<double>(v); };
  std::vector<int> first_tried;
  const Fails<int> recording = [&](const int& v) {
    first_tried.push_back(v);
    return at_least_37(v);
  };
  const Outcome<int> a = greedy(1000, decrement_first, at_least_37, Budget{2000, 600});
  const Outcome<int> b = greedy(1000, cheapest_first, recording, Budget{2000, 600});
  EXPECT_EQ(a.minimal, 37);
  EXPECT_EQ(b.minimal, 37);
  ASSERT_GE(first_tried.size(), 3u);
  EXPECT_EQ(first_tried[0], 1000) << "the start value, its identity unknown";
  EXPECT_EQ(first_tried[1], 0) << "the cheapest candidate first";
  EXPECT_EQ(first_tried[2], 500);
  EXPECT_LT(b.tried * 10, a.tried) << "halving first: a few dozen runs, not ~1000";
  // Windows of speculative runs end on the same value.
  Search<int> wide = cheapest_first;
  wide.width = 3;
  wide.fails_many = [&](const std::vector<const int*>& vs) {
    std::vector<std::optional<std::string>> out;
    for (const int* v : vs) out.push_back(at_least_37(*v));
    return out;
  };
  EXPECT_EQ(greedy(1000, wide, at_least_37, Budget{2000, 600}).minimal, 37);
}

}  // namespace
}  // namespace shardfuzz::fuzz::shrinking
