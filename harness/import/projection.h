// The memory projection of an imported model: its scenario's run (the real schedule at small
// widths, imported_scenario.h) priced with the plan's real bytes, per rank and per layer in
// backward — the FSDP buffers by kind (unsharded parameters, pending all-gathers, and the stale
// ones: pending for a group that already finished backward), on top of a stated baseline
// (sharded parameters, gradients and optimizer states of this rank, and the activations the AC
// mode keeps). Against a device's memory it names the first layer whose backward does not fit.
#pragma once

#include "harness/import/imported_scenario.h"
#include "harness/run/run_record.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::harness::import {

struct Baseline {
  int64_t params = 0;     // this rank's shards, in the storage dtype
  int64_t grads = 0;      // of the trainable ones, in the reduce dtype
  int64_t optimizer = 0;  // AdamW: two float32 states per trainable element
  int64_t kept_per_layer = 0;      // activations AC keeps per layer until its backward
  int64_t recompute = 0;           // one layer's activations, live while its backward runs
  std::string assumption;          // how the activations were estimated (routing, batch, sequence)
  int64_t fixed() const { return params + grads + optimizer; }
};

struct ProjectedLayer {
  int rank = 0;
  int step = 0;
  std::string group;      // the block whose post_backward this is
  int64_t unsharded = 0;  // parameters unsharded right after it
  int64_t pending = 0;    // all-gather outputs not yet waited on
  int64_t stale = 0;      // of those, held for groups that already finished backward
  int64_t activations = 0;  // kept for the layers not yet through backward, plus one recompute
  int64_t total = 0;        // baseline + activations + unsharded + pending
  // Measured by the run itself (its allocator probe: everything the rank holds, above its start),
  // when it ran at the real widths: the schema's blocks approximate the model's (see
  // imported_scenario.h), so this cross-checks the projection rather than replacing it. -1: not.
  int64_t measured = -1;
};

struct Projection {
  Baseline baseline;
  std::vector<ProjectedLayer> layers;        // every rank's, in its order
  std::optional<ProjectedLayer> out_of_memory;  // the first (lowest total headroom) past the device's memory
  int64_t device_memory = 0;                 // 0: not asked
  int64_t headroom = 0;                      // device memory - the largest total (when asked)
};

Projection project(const RunRecord& run, const ImportedScenario& imported, const FsdpPlan& plan, const ModelShape& m,
                   const Recipe& recipe, int64_t device_memory = 0);

// Rank 0's rows as a table, the baseline, and the verdict against the device's memory.
std::string projection_table(const Projection& p);

}  // namespace shardfuzz::harness::import
