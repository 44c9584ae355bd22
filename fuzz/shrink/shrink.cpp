// The public shrink API (fuzz/shrink/shrink.h) on the generic driver (driver.h): over a generator's
// shrink tree, and over the catalogue of structural edits (edits.h).
#include "fuzz/shrink/shrink.h"

#include "fuzz/shrink/driver.h"
#include "fuzz/shrink/edits.h"
#include "fuzz/shrink/edits/all.h"
#include "harness/scenario/scenario_json.h"

#include <rapidcheck/seq/Create.h>
#include <rapidcheck/seq/Transform.h>
#include <rapidcheck/shrinkable/Create.h>

#include <memory>

namespace shardfuzz::fuzz {

namespace {

using harness::Scenario;

bool validates(const Scenario& sc) {
  try {
    sc.validate();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// A node of a generator's shrink tree with its value, drawn once (nullopt: drawing it threw).
struct Node {
  std::optional<rc::Shrinkable<Scenario>> tree;
  std::optional<Scenario> value;
};

Node node_of(const rc::Shrinkable<Scenario>& tree) {
  Node node{tree, std::nullopt};
  try {
    node.value = tree.value();
  } catch (const std::exception&) {
  }
  return node;
}

// Progress in the public form: each step named by its edit (if any) and what it changed since
// the last accepted scenario.
template <typename T, typename ScenarioOf>
std::function<void(const shrinking::Step<T>&)> progress_of(const ShrinkProgress& progress, const Scenario& start,
                                                           ScenarioOf scenario_of) {
  if (!progress) return {};
  auto last = std::make_shared<Scenario>(start);
  return [=](const shrinking::Step<T>& step) {
    const Scenario& now = scenario_of(step.value);
    const std::string change = shrinking::describe_change(*last, now);
    progress(ShrinkStep{now, step.edit.empty() ? change : step.edit + " (" + change + ")", step.accepted, step.tried,
                        step.elapsed_seconds});
    *last = now;
  };
}

template <typename T>
ShrinkResult result_of(const shrinking::Outcome<T>& o, Scenario minimal) {
  ShrinkResult r;
  r.minimal = std::move(minimal);
  r.failure = o.failure;
  r.reproduced = o.reproduced;
  r.steps_tried = o.tried;
  r.steps_accepted = o.accepted;
  r.skipped = o.skipped;
  r.unchanged_steps = o.unchanged;
  r.elapsed_seconds = o.elapsed_seconds;
  r.budget_exhausted = o.budget_exhausted;
  return r;
}

}  // namespace

std::vector<Scenario> structural_shrinks(const Scenario& sc, const StructuralShrinkOptions& options) {
  std::vector<Scenario> out;
  for (auto& candidate : shrinking::structural_candidates(sc, options)) out.push_back(std::move(candidate.value));
  return out;
}

rc::Shrinkable<Scenario> shrinkable_from(const Scenario& scenario, StructuralShrinkOptions options) {
  return rc::shrinkable::shrinkRecur(scenario, [options](const Scenario& sc) {
    return rc::seq::fromContainer(structural_shrinks(sc, options));
  });
}

rc::Shrinkable<Scenario> with_schedule_shrinks(const rc::Shrinkable<Scenario>& tree,
                                               std::optional<harness::ScheduleSpec> schedule) {
  const auto under = [schedule](Scenario sc) {
    sc.schedule = schedule;
    return sc;
  };
  return rc::shrinkable::lambda([tree, under] { return under(tree.value()); },
                                [tree, schedule, under] {
                                  std::vector<std::optional<harness::ScheduleSpec>> simpler;
                                  const Scenario here = under(tree.value());
                                  for (const auto& edit : {shrinking::edits::canonical_schedule, shrinking::edits::fewer_switches})
                                    for (const Scenario& c : edit(here)) simpler.push_back(c.schedule);
                                  return rc::seq::concat(
                                      rc::seq::map(rc::seq::fromContainer(std::move(simpler)),
                                                   [tree](const std::optional<harness::ScheduleSpec>& s) {
                                                     return with_schedule_shrinks(tree, s);
                                                   }),
                                      rc::seq::map(tree.shrinks(), [schedule](const rc::Shrinkable<Scenario>& child) {
                                        return with_schedule_shrinks(child, schedule);
                                      }));
                                });
}

ShrinkResult shrink(const rc::Shrinkable<Scenario>& start, const FailurePredicate& fails, ShrinkBudget budget,
                    const ShrinkProgress& progress, std::optional<std::string> failure, const ShrinkInParallel& parallel) {
  Node root{start, start.value()};
  shrinking::Search<Node> search;
  search.candidates = [](const Node& node) {
    return rc::seq::map(node.tree->shrinks(),
                        [](const rc::Shrinkable<Scenario>& child) { return shrinking::Candidate<Node>{node_of(child), ""}; });
  };
  search.key = [](const Node& node) { return harness::to_json_text(*node.value); };
  search.admissible = [](const Node& node) { return node.value && validates(*node.value); };
  search.progress = progress_of<Node>(progress, *root.value, [](const Node& node) -> const Scenario& { return *node.value; });
  search.change = [](const Node& from, const Node& to) { return shrinking::describe_change(*from.value, *to.value); };
  search.cost = [](const Node& node) { return shrinking::run_cost(*node.value); };
  const shrinking::Fails<Node> fails_node = [&](const Node& node) { return fails(*node.value); };
  if (parallel.fails) {
    search.width = parallel.width;
    search.fails_many = [&](const std::vector<const Node*>& nodes) {
      std::vector<const Scenario*> values;
      for (const Node* n : nodes) values.push_back(&*n->value);
      return parallel.fails(values);
    };
  }
  const auto outcome = shrinking::greedy(std::move(root), search, fails_node, {budget.max_steps, budget.max_seconds},
                                         std::move(failure));
  return result_of(outcome, *outcome.minimal.value);
}

ShrinkResult shrink(const Scenario& start, const StructuralShrinkOptions& options, const FailurePredicate& fails,
                    ShrinkBudget budget, const ShrinkProgress& progress, std::optional<std::string> failure,
                    const ShrinkInParallel& parallel) {
  shrinking::Search<Scenario> search;
  search.candidates = [options](const Scenario& sc) {
    return rc::seq::fromContainer(shrinking::structural_candidates(sc, options));
  };
  search.key = [](const Scenario& sc) { return harness::to_json_text(sc); };
  search.admissible = validates;
  search.progress = progress_of<Scenario>(progress, start, [](const Scenario& sc) -> const Scenario& { return sc; });
  search.width = parallel.width;
  search.fails_many = parallel.fails;
  search.change = [](const Scenario& from, const Scenario& to) { return shrinking::describe_change(from, to); };
  search.cost = shrinking::run_cost;
  const auto outcome = shrinking::greedy(start, search, shrinking::Fails<Scenario>(fails),
                                         {budget.max_steps, budget.max_seconds}, std::move(failure));
  return result_of(outcome, outcome.minimal);
}

}  // namespace shardfuzz::fuzz
