// The campaign loop.
#include "fuzz/campaign/loop.h"

#include "fuzz/campaign/shrink_case.h"
#include "fuzz/campaign/triage.h"
#include "harness/scenario/scenario_features.h"

#include <unistd.h>

#include <chrono>

namespace shardfuzz::fuzz {
namespace {

using Clock = std::chrono::steady_clock;

bool any_stops_before(const std::vector<CampaignSink*>& sinks, int k) {
  for (const CampaignSink* s : sinks)
    if (s->stops_before(k)) return true;
  return false;
}

// A differential case's line of the campaign's per-case results.
CaseOutcome differential_case(int k, uint64_t seed, double seconds, const CaseCheck& check, const harness::Scenario& s) {
  return {k, seed, seconds, check.property.value_or(""), check.message, check.differential->torch_seconds,
          check.differential->native_seconds, check.differential->layer_bytes_difference, harness::features_of(s)};
}

void print_finding(const Finding& f, std::ostream& out) {
  out << "fuzz: minimal case: " << describe(f.minimal) << (f.differential() ? "\nfuzz: attribution: " : "\nfuzz: bug zoo: ")
      << f.blamed << "\nfuzz: " << f.property << ": " << f.message << "\nfuzz: wrote " << f.path << " ("
      << f.shrink.steps_accepted << " shrink steps accepted of " << f.shrink.steps_tried << " tried in "
      << static_cast<int>(f.shrink.elapsed_seconds) << " s" << (f.shrink.budget_exhausted ? ", budget exhausted" : "")
      << "; found at " << static_cast<int>(f.seconds_to_find) << " s, shrunk by " << static_cast<int>(f.seconds_to_shrink)
      << " s)\nreplay with: shardfuzz run " << f.path << "\n" << (f.report.empty() ? "" : "report: " + f.report + "\n")
      << std::flush;
}

// One case's way through the loop; whether the campaign goes on after it.
class CaseStep {
 public:
  CaseStep(const CampaignOptions& o, LoopParts& parts, Triage& triage, CampaignResult& result, std::ostream& out)
      : o_(o), parts_(parts), triage_(triage), result_(result), out_(out), nl_(::isatty(STDOUT_FILENO) ? "\n" : "") {}

  bool run(int k) {
    const uint64_t seed = case_seed(o_.seed, k);
    const int size = case_size(k);
    const Draw draw = parts_.source.draw(seed, size);
    const harness::Scenario& scenario = draw.shrinkable.value();
    const auto started = Clock::now();
    const CaseCheck check = parts_.runner.check(scenario);
    parts_.source.after_case(scenario, k, seed);
    ++result_.cases_this_session;
    if (check.differential)
      result_.cases.push_back(
          differential_case(k, seed, std::chrono::duration<double>(Clock::now() - started).count(), check, scenario));
    const CaseDone done{k, seed, check};
    switch (triage_.of_case(scenario, check)) {
      case Triage::Case::Passes:
      case Triage::Case::NotTheHuntedRow: return tell_case(done);
      case Triage::Case::Repeat:
        ++result_.repeated_failures;
        out_ << nl_ << "fuzz: case " << k << " (seed " << seed << ") fails " << *check.failure()
             << " again (shrunk already this session; not shrunk again)\n" << std::flush;
        return tell_case(done);
      case Triage::Case::Shrink: break;
    }
    out_ << nl_ << "fuzz: case " << k << " (seed " << seed << ", size " << size << ") fails " << *check.property << ": "
         << check.message << (draw.origin == Draw::Origin::Generated ? "" : "\nfuzz: case is a " + draw.describe())
         << "\nfuzz: shrinking (" << describe(scenario) << ")\n" << std::flush;
    return shrunk(draw, done, size);
  }

 private:
  bool tell_case(const CaseDone& done) {
    for (CampaignSink* s : parts_.sinks) s->on_case(done);
    return true;
  }

  bool shrunk(const Draw& draw, const CaseDone& done, int size) {
    const double found_at = parts_.session.elapsed();
    for (CampaignSink* s : parts_.sinks) s->on_failing_case(done.index);
    std::optional<Finding> f = shrink_case(o_, *o_.backend, parts_.runner, draw.shrinkable, done.check, done.index,
                                           [&] { return any_stops_before(parts_.sinks, done.index); }, out_);
    if (!f) return false;
    f->case_seed = done.seed;
    f->size = size;
    f->seconds_to_find = found_at;
    const Triage::Finding fate = triage_.of_finding(*f);
    if (fate == Triage::Finding::PassedOver) {
      out_ << "fuzz: minimal case blamed on " << f->blamed << ", not row " << o_.until_row << " (wrote " << f->path
           << "); going on\n";
      return tell_case(done);
    }
    f->seconds_to_shrink = parts_.session.elapsed();
    for (CampaignSink* s : parts_.sinks) s->on_finding(*f);
    tell_case(done);
    print_finding(*f, out_);
    result_.findings.push_back(std::move(*f));
    return fate != Triage::Finding::KeptAndEnds;
  }

  const CampaignOptions& o_;
  LoopParts& parts_;
  Triage& triage_;
  CampaignResult& result_;
  std::ostream& out_;
  const char* nl_;  // ends the progress line rewritten in place on a terminal
};

}  // namespace

CampaignResult run_loop(const CampaignOptions& options, LoopParts& parts, std::ostream& out) {
  CampaignResult result;
  Triage triage(options, parts.runner);
  CaseStep step(options, parts, triage, result, out);
  for (int k = parts.session.next_case(); !parts.session.over(k); ++k) {
    if (!options.in_shard(k)) continue;  // another shard's case: nothing to ask of the sinks
    if (any_stops_before(parts.sinks, k) || !step.run(k)) break;
  }
  for (CampaignSink* s : parts.sinks) s->on_end(result);
  return result;
}

}  // namespace shardfuzz::fuzz
