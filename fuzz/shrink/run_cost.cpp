// run_cost (edits.h): a rough price of a scenario's run, for the shrinker's cheapest-first order.
#include "fuzz/shrink/edits.h"

namespace shardfuzz::fuzz::shrinking {

double run_cost(const harness::Scenario& sc) {
  // A small case's run is its ops' dispatch and its ranks' rendezvous, over and over: ranks x the
  // forwards (and their backwards) of every step. Only these count. Widths, blocks and groups stay
  // in the generator's order, which reaches smaller reproducers: ordered by their cost too, the
  // seed leak's shrink dropped the head's group before a block and ended on two blocks, not one.
  const double forwards = static_cast<double>(sc.steps) * sc.micro_batches *
                          (sc.forwards_per_backward + (sc.eval_forward ? 1 : 0));
  return static_cast<double>(sc.world_size) * forwards;
}

}  // namespace shardfuzz::fuzz::shrinking
