// Shrinking a failing scenario under a budget. RapidCheck shrinks without limit and inside its own
// test loop; here one trial is a whole multi-rank run, so the driver is ours (fuzz/shrink/driver.h:
// greedy descent bounded by trials and wall-clock seconds, accepting only children that fail the
// same way as the original), over a Shrinkable's shrink tree or over the catalogue of named
// structural edits (fuzz/shrink/edits.h) for scenarios that did not come from the generator (a
// file given to `shardfuzz shrink`).
#pragma once

#include "fuzz/shrink/structural_options.h"
#include "harness/scenario/scenario.h"

#include <rapidcheck/Shrinkable.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::fuzz {

// The failure identity of a scenario (e.g. the name of the first property that failed), or
// nullopt when it passes. Must be deterministic for the shrink to mean anything.
using FailurePredicate = std::function<std::optional<std::string>(const harness::Scenario&)>;

struct ShrinkBudget {
  int max_steps = 500;         // predicate calls (the original's included, when it is evaluated)
  double max_seconds = 600.0;  // wall clock, checked before each predicate call
};

// One accepted step, for progress output.
struct ShrinkStep {
  const harness::Scenario& scenario;  // the new smallest failing scenario
  // The accepted edit: the catalogue's name and what changed ("drop blocks (blocks 4 -> 3)"), or,
  // in a generator's tree, whose shrinks have no names, what changed ("world_size 8 -> 4").
  std::string edit;
  int accepted = 0;                   // steps accepted so far, this one included
  int tried = 0;                      // predicate calls so far
  double elapsed_seconds = 0;
};
using ShrinkProgress = std::function<void(const ShrinkStep&)>;

// Speculative runs (optional): up to `width` candidates at once, their identities in the order
// given; the caller runs them in parallel (one isolated case worker each: fuzz/campaign/case_pool.h). The
// shrink ends on the scenario the one-at-a-time shrink ends on, in fewer rounds; a candidate run
// ahead is never run again.
struct ShrinkInParallel {
  int width = 1;
  std::function<std::vector<std::optional<std::string>>(const std::vector<const harness::Scenario*>&)> fails;
};

struct ShrinkResult {
  harness::Scenario minimal;  // the start value when nothing smaller failed the same way
  std::string failure;        // the identity every accepted step reproduced
  bool reproduced = true;     // false: the start value did not fail (minimal is the start)
  int steps_tried = 0;        // predicate calls
  int steps_accepted = 0;     // children taken
  int skipped = 0;            // children not run: equal to one already run, or failing validate()
  int unchanged_steps = 0;    // children equal to the current scenario, taken without a run
  double elapsed_seconds = 0;
  bool budget_exhausted = false;  // stopped by max_steps or max_seconds with children untried
};

// Greedy descent: walk the current node's shrinks in order; the first child that fails with the
// original identity becomes the current node, and the walk restarts from its shrinks; stop when
// no child fails so or the budget is spent. `failure`: the start value's identity when the caller
// already knows it (saves one run); otherwise the driver evaluates the start value first.
// A child equal (as JSON text) to the current scenario is taken without a run (it shrank a draw
// with no effect); children equal to another scenario already run, and children that fail
// validate(), are skipped without a run. Exceptions from `fails` propagate.
ShrinkResult shrink(const rc::Shrinkable<harness::Scenario>& start, const FailurePredicate& fails, ShrinkBudget budget,
                    const ShrinkProgress& progress = {}, std::optional<std::string> failure = std::nullopt,
                    const ShrinkInParallel& parallel = {});


// The same descent over the structural edits of shrinkable_from(start, options), with each step
// named by its edit: the same steps as shrink(shrinkable_from(start, options), ...).
ShrinkResult shrink(const harness::Scenario& start, const StructuralShrinkOptions& options,
                    const FailurePredicate& fails, ShrinkBudget budget, const ShrinkProgress& progress = {},
                    std::optional<std::string> failure = std::nullopt, const ShrinkInParallel& parallel = {});

// A shrink tree for a scenario from anywhere: its children are the candidates of the catalogue of
// named structural edits (fuzz/shrink/edits.h), biggest first — drop blocks (renumbering the rest
// and their fully_shard entries and prefetch lists), faults, smaller world, drop a fully_shard
// entry (nested first), AC off, prefetch lists, meshes and options, smaller dims, fewer steps,
// plainer steps, models, precision and blocks, default optimizer — each passed through
// gen::repair() and kept only if it validates and differs from its parent and earlier siblings.
rc::Shrinkable<harness::Scenario> shrinkable_from(const harness::Scenario& scenario,
                                                  StructuralShrinkOptions options = {});

// `tree`'s values with their schedule replaced by `schedule`; each node's shrinks try simpler
// schedules first (the canonical one, no draws, fewer switches: edits/schedule.cpp), then the
// tree's own shrinks under the same schedule. How a campaign shrinks a failing case's pinned
// schedule together with its generator's tree.
rc::Shrinkable<harness::Scenario> with_schedule_shrinks(const rc::Shrinkable<harness::Scenario>& tree,
                                                        std::optional<harness::ScheduleSpec> schedule);

// The children shrinkable_from() gives `scenario`, in order (for tests and `shardfuzz shrink -v`).
std::vector<harness::Scenario> structural_shrinks(const harness::Scenario& scenario,
                                                  const StructuralShrinkOptions& options = {});

}  // namespace shardfuzz::fuzz
