// Edits of the training run: fewer steps, a plainer step (one micro-batch, one forward per
// backward, no evaluation forward), the default optimizer.
#include "fuzz/gen/ladders.h"
#include "fuzz/shrink/edits/helpers.h"

namespace shardfuzz::fuzz::shrinking::edits {

// 1, then half, then one fewer.
Candidates fewer_steps(const Scenario& sc) {
  if (sc.steps <= 1) return {};
  std::vector<int> steps = {1};
  if (sc.steps / 2 > 1) steps.push_back(sc.steps / 2);
  if (sc.steps - 1 > steps.back()) steps.push_back(sc.steps - 1);
  Candidates out;
  for (int st : steps) out.push_back(with(sc, [st](Scenario& s) { s.steps = st; }));
  return out;
}

Candidates plainer_step(const Scenario& sc) {
  Candidates out;
  push_simplest(out, sc, &Scenario::micro_batches, gen::ladders::simplest(gen::ladders::kMicroBatches));
  push_simplest(out, sc, &Scenario::forwards_per_backward, gen::ladders::simplest(gen::ladders::kForwardsPerBackward));
  push_simplest(out, sc, &Scenario::eval_forward, false);
  return out;
}

Candidates default_optimizer(const Scenario& sc) {
  const train::OptimizerConfig defaults;
  const auto& o = sc.optimizer;
  if (o.kind == defaults.kind && o.lr == defaults.lr && o.beta1 == defaults.beta1 && o.beta2 == defaults.beta2 &&
      o.eps == defaults.eps && o.weight_decay == defaults.weight_decay)
    return {};
  return {with(sc, [&](Scenario& s) { s.optimizer = defaults; })};
}

}  // namespace shardfuzz::fuzz::shrinking::edits
