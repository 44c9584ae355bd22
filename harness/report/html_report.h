// One self-contained HTML file that explains a run (every finding of a campaign gets one, and
// `shardfuzz run --html`): the verdicts with the failed property's message, the command that
// replays it, the scenario as a tree (groups, meshes, AC, LoRA, prefetch lists), and per rank the
// memory at each group's post_backward in the last step's backward: the ledger's buffer kinds
// stacked (stale all-gathers in red), the allocator's bytes, the bound the per-layer property
// expects (memory back to where it was, up to what the ledger legitimately explains, plus its
// tolerance) and the culprit group marked. Plots are drawn by Chart.js (Debian's libjs-chart.js),
// inlined so the file opens anywhere; without it the same numbers are tables.
#pragma once

#include "harness/properties/property.h"
#include "harness/run/run_record.h"
#include "harness/scenario/scenario.h"

#include <string>
#include <vector>

namespace shardfuzz::harness {

// The groups a failure is about: those holding stale all-gathers at any post_backward of any
// rank, else the group names the failed verdict's message mentions (longest first).
std::vector<std::string> culprit_groups(const RunRecord& run, const std::vector<Verdict>& verdicts);

std::string html_report(const Scenario& scenario, const RunRecord& run, const std::vector<Verdict>& verdicts,
                        const std::string& replay_command);

// Chart.js as read for reports: $SHARDFUZZ_CHARTJS, else the file CMake found at configure time
// (/usr/share/javascript/chart.js/chart.min.js); "" when neither is readable.
std::string chartjs_source();

}  // namespace shardfuzz::harness
