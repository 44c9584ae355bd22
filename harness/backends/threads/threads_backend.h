// The threads backend: runs a Scenario on the native runtime with N ranks as threads of one
// process (ThreadWorld), the embedded default — no GPU, no set-up.
#pragma once

#include "harness/backends/backend.h"
#include "harness/backends/run_options.h"
#include "harness/run/run_record.h"
#include "harness/scenario/scenario.h"

#include <memory>

namespace shardfuzz::harness {

// Validates the scenario first (std::invalid_argument naming the field); rank failures are
// reported in the RunRecord, never thrown.
RunRecord run_threads(const Scenario& scenario, const RunOptions& options = {});

std::unique_ptr<Backend> make_threads_backend(const RunOptions& options = {});
// The embedded default (default RunOptions), shared: what runs a case when the caller names no
// backend. It keeps no state between runs.
Backend& threads_backend();

}  // namespace shardfuzz::harness
