// A budgeted greedy shrinker over any value type: given a value that fails, the candidate edits
// of a value and a "still fails the same way" predicate, it walks the candidates in order, takes
// the first that fails with the original identity, and starts again from it, until no candidate
// does or the budget (runs, seconds) is spent. Scenarios are one instance (fuzz/shrink/shrink.h); the
// driver knows nothing of them, so it is tested on integers and vectors.
// The namespace is `shrinking`: `fuzz::shrink` is the public function.
#pragma once

#include <rapidcheck/Seq.h>

#include <functional>
#include <optional>
#include <string>

namespace shardfuzz::fuzz::shrinking {

struct Budget {
  int max_runs = 500;          // predicate calls (the start value's included, when it is evaluated)
  double max_seconds = 600.0;  // wall clock, checked before each predicate call
};

// A smaller value and the name of the edit that made it ("" when the tree has no names).
template <typename T>
struct Candidate {
  T value;
  std::string edit;
};

// One accepted step, for progress output.
template <typename T>
struct Step {
  const T& value;           // the new smallest failing value
  const std::string& edit;  // the edit that made it
  int accepted = 0;         // steps accepted so far, this one included
  int tried = 0;            // predicate calls so far
  double elapsed_seconds = 0;
};

// The failure identity of a value (e.g. the first property that failed), or nullopt when it
// passes. Must be deterministic for the shrink to mean anything.
template <typename T>
using Fails = std::function<std::optional<std::string>(const T&)>;

template <typename T>
struct Search {
  std::function<rc::Seq<Candidate<T>>(const T&)> candidates;  // in the order to try them; lazy
  std::function<std::string(const T&)> key;                   // equal keys: the same value
  std::function<bool(const T&)> admissible;                   // false: skipped without a run; unset: all
  std::function<void(const Step<T>&)> progress;               // once per accepted step; may be unset
  // Speculative runs (optional): the identities of up to `width` candidates at once, in the order
  // given (the caller runs them in parallel). The descent still takes the first candidate in order
  // that reproduces, and a candidate run ahead is not run again, so it ends on the value the
  // one-at-a-time descent ends on; only the number of runs (and the budget's cut) differs.
  int width = 1;
  std::function<std::vector<std::optional<std::string>>(const std::vector<const T*>&)> fails_many;
  // What a candidate changes from the current value, in words ("steps 3 -> 1"; optional). When set,
  // the walk tries the candidates whose change was already run and rejected at an earlier value
  // last, after the fresh ones: a tree's first shrinks (drop a block, fewer ranks) are offered
  // again after every step and mostly fail again. Every candidate is still tried before the walk
  // ends, so the result is as minimal, though it may be another minimum than the plain order's.
  std::function<std::string(const T& from, const T& to)> change;
  // What running a candidate costs, roughly (optional). When set, the walk tries the cheaper
  // candidates first (after the fresh/rejected split above, and in the given order among equal
  // costs): the cuts that make every later run cheaper (fewer ranks, steps, blocks) come before
  // the edits that cost as much as the current value. Every candidate is still tried before the
  // walk ends.
  std::function<double(const T&)> cost;
};

template <typename T>
struct Outcome {
  T minimal;                  // the start value when nothing smaller failed the same way
  std::string failure;        // the identity every accepted step reproduced
  bool reproduced = true;     // false: the start value did not fail (minimal is the start)
  int tried = 0;              // predicate calls
  int accepted = 0;           // candidates taken after a run
  int skipped = 0;            // candidates not run: inadmissible, or equal to one already run
  int unchanged = 0;          // candidates equal to the current value, taken without a run
  double elapsed_seconds = 0;
  bool budget_exhausted = false;  // stopped by the budget with candidates untried
};

// Greedy descent from `start`. `failure`: the start value's identity when the caller knows it
// (saves one run); otherwise the driver runs the start value first. A candidate with the current
// value's key is taken without a run (an edit with no effect; taking it lets the tree move on);
// one with the key of a value already run is skipped. Exceptions from `fails` propagate.
template <typename T>
Outcome<T> greedy(T start, const Search<T>& search, const Fails<T>& fails, Budget budget,
                  std::optional<std::string> failure = std::nullopt);

}  // namespace shardfuzz::fuzz::shrinking

#include "fuzz/shrink/driver.hpp"
