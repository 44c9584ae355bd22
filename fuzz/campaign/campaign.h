// The fuzz campaign's front door: draw case k from its own seed, run it, check every property; on a
// failure, shrink it (same property, under a budget), compute its verdict under every profile, and
// write the minimal reproducer atomically. The pieces, libFuzzer-style, each in its own file:
//   plan.h     what was asked (one field list: the state file, the CLI's checks, merge);
//              options.h adds what runs it and where it writes; state.h how far it got
//   finding.h  what it gives back
//   source.h   where cases come from (the generator, or the coverage corpus and its mutants)
//   case_runner.h  how a case runs (isolated worker processes by default)
//   triage.h   what a failing case is (hunted row, repeat, new) and whether it ends the campaign
//   shrink_case.h  the shrink, blame and reproducer of a failing case
//   sink.h     who hears of each case, finding and the end (state saver, findings database,
//              progress line, coverage report; a --jobs parent injects its claim)
//   loop.h     the loop itself: source -> runner -> triage -> shrink -> sinks
//   jobs.h     --jobs: N shard processes, started and reaped through harness/subprocess;
//              merge.h unites shard folders
//   guidance.h coverage guidance: a source, and a sink for the coverage report
#pragma once

#include "fuzz/campaign/case_runner.h"
#include "fuzz/campaign/finding.h"
#include "fuzz/campaign/options.h"
#include "fuzz/campaign/source.h"
#include "harness/backends/threads/threads_backend.h"
#include "harness/scenario/scenario.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace shardfuzz::fuzz {

class CampaignSink;

// The first failing property's name, or nullopt (the predicate shrinking preserves), on `backend`.
std::optional<std::string> first_failing_property(const harness::Scenario& scenario, std::string* message = nullptr,
                                                  harness::Backend& backend = harness::threads_backend());

// Runs the campaign with its standard sinks, and `from_parent` (a --jobs shard's claim) when given.
CampaignResult run_campaign(const CampaignOptions& options, std::ostream& out, CampaignSink* from_parent = nullptr);

// The options a saved campaign ran with, to resume it writing into `out_dir`.
CampaignOptions options_to_resume(const CampaignState& state, const std::string& out_dir);

}  // namespace shardfuzz::fuzz
