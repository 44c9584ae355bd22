// Backends: what runs a scenario. The threads backend runs it on the native runtime (ranks as
// threads, the embedded default); the process and nccl backends on the native runtime in rank
// processes; the torch backend on PyTorch's own fully_shard through a long-lived worker. All
// return a RunRecord, so the same properties, shrinking and reproducers apply; RunRecord::observed
// says what a backend could not see. registry/registry.h makes them by name.
#pragma once

#include "harness/run/run_record.h"
#include "harness/scenario/scenario.h"

#include <string>

namespace shardfuzz::harness {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Validates the scenario (std::invalid_argument naming the field; the torch backend also for
  // what its export cannot express); a failure of the run itself is reported in the RunRecord.
  virtual RunRecord run(const Scenario& scenario) = 0;
  // Whether this backend can run a scenario under `profile` as the profile means it (torch: only
  // torch-2.11, as installed, and torch-2.9, its post_forward with PR #164009 undone).
  virtual bool runs_profile(const std::string& profile) const { return true; }
  // The threads backend with the default RunOptions: it runs in this process, so a case can be
  // forked into an isolated child (harness/isolation) and its RunRecord kept with the verdicts.
  virtual bool is_embedded_default() const { return false; }
};

}  // namespace shardfuzz::harness
