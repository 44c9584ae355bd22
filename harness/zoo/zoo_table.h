// The bug zoo as one table: each row of docs/bug-zoo.md that a semantics switch reproduces, with
// what tells it apart from the other rows of the same switch (read off the scenario and the failing
// run's timeline, never off a message), the upstream reference, and whether the switch models a
// released version's behaviour or a defect injected for the class. Blame (harness/zoo/blame.h)
// reads it; nothing else maps switches to rows.
#pragma once

#include "harness/run/run_record.h"
#include "harness/scenario/scenario.h"

#include <string>
#include <vector>

namespace shardfuzz::harness::zoo {

// What selects a row among those of one switch; the first row of the switch whose discriminator
// holds is the one (so `Otherwise` comes last).
enum class Discriminator {
  Otherwise,                          // the switch alone names the row
  ReentrantBlock,                     // a block checkpoints with reentrant AC (the recompute re-runs hooks)
  RootUnshardedAfterEvalForward,      // the no_grad evaluation forward left the root unsharded, asked not to
  StrayForwardPrefetchInRecompute,    // the first unconsumed all-gather: a forward prefetch of a finished group
  StrayBackwardPrefetchOfNeverBackward,  // ... a backward prefetch of a group with no backward left this step
};

struct ZooRow {
  const char* row;          // "1".."15" (bug-zoo.md) or "S2".."S6" (the source-reading rows)
  const char* switch_name;  // the runtime/semantics/profile.h switch that reproduces it
  Discriminator when;
  bool injected;            // an injected defect rather than a released version's behaviour
  const char* upstream;     // the upstream reference
};

const std::vector<ZooRow>& zoo_table();

// The row a blamed switch means for this scenario and its failing run (nullptr: the switch has no
// row, e.g. a measured behaviour that is no bug).
const ZooRow* row_for(const std::string& switch_name, const Scenario& scenario, const RunRecord& failing_run);

}  // namespace shardfuzz::harness::zoo
