// Shrinking a failing case, blaming it, writing it.
#include "fuzz/campaign/shrink_case.h"

#include "fuzz/campaign/case_pool.h"
#include "fuzz/campaign/triage.h"
#include "fuzz/campaign/write_reproducer.h"
#include "harness/properties/property.h"
#include "harness/zoo/blame.h"

namespace shardfuzz::fuzz {
namespace {

// Thrown from a shrink step when the campaign must stop before the case being shrunk.
struct CaseOvertaken {};

// A differential finding's attribution (torch changed, native model wrong, or a property both
// sides fail, then blamed natively on a zoo row) into `f`, and what its reproducer keeps: the torch
// version, what torch ran as, the first divergence and both sides' timelines of the diverging rank.
nlohmann::json attribute_differential(harness::differential::Differential& differential,
                                      const harness::differential::DifferentialCase& c, Finding& f) {
  const harness::differential::Attribution a = differential.attribute(c);
  f.zoo = a.slug();
  f.attribution = a.kind;
  f.blamed = a.text;
  if (a.kind == harness::differential::Attribution::Kind::PropertyFailedOnBoth) {
    const auto blames = harness::zoo::blame(c.native_scenario, &c.native);
    if (!blames.empty()) f.blamed += " (bug zoo: " + harness::zoo::describe(blames) + ")";
  }
  // The diverging rank's compared events (the divergence's index counts them).
  const int rank = c.divergence ? c.divergence->rank : 0;
  auto timeline = [rank](const harness::RunRecord& run) {
    nlohmann::json events = nlohmann::json::array();
    if (rank < static_cast<int>(run.ranks.size()))
      for (const auto* e : harness::differential::compared_events(run.ranks[rank])) events.push_back(e->to_json());
    return events;
  };
  const auto& o = differential.options();
  return {{"torch", o.model.version},
          {"profile", o.model.profile},
          {"torch_ran_as", o.torch_as.empty() ? "installed" : o.torch_as},
          {"attribution", a.to_json()},
          {"divergence", c.divergence ? c.divergence->to_json() : nlohmann::json()},
          {"timelines", {{"rank", rank}, {"native", timeline(c.native)}, {"torch", timeline(c.torch)}}}};
}

// The minimal case's zoo row (or, off the native runtime, why there is none).
void blame_natively(harness::Backend& backend, CaseRunner& runner, const CaseCheck& minimal_check, Finding& f) {
  const auto blames = minimal_check.property ? runner.blame(f.minimal, &minimal_check) : std::vector<harness::zoo::Blame>{};
  f.blamed = harness::zoo::describe(blames);
  f.zoo = blames.empty() ? "unattributed" : blames.front().row;
  if (!backend.is_embedded_default() && blames.empty() && runner.verdict_under(f.minimal, f.minimal.profile.name) == "pass")
    f.blamed = "unattributed: the native runtime passes it under " + f.minimal.profile.name + " — a divergence between " +
               backend.name() + " and the native runtime";
}

ShrinkResult shrink_keeping_failure(const CampaignOptions& options, harness::Backend& backend, CaseRunner& runner,
                                    const rc::Shrinkable<harness::Scenario>& drawn, const CaseCheck& failing,
                                    const std::function<bool()>& overtaken, std::optional<CasePool>& pool,
                                    int tries, std::ostream& out) {
  const std::string property = *failing.property;
  // Hunting a row, a shrink step must keep the row too (e.g. row 1 needs its reentrant block:
  // replacing it by a non-reentrant one would still fail, as row 5).
  const CasePool::Task fails_once_on = [&](CaseRunner& on, const harness::Scenario& s) -> std::optional<std::string> {
    if (overtaken()) throw CaseOvertaken{};
    // A divergence's identity needs both sides whole; a property's, only the properties up to it.
    const CaseCheck c = on.check(s, failing.differential ? "" : property);
    if (!c.property || options.until_row.empty()) return c.failure();
    return blamed_on(on.blame(s, &c, options.until_row), options.until_row) ? c.failure() : std::nullopt;
  };
  // A flaky failure is shrunk under repetitions: a candidate keeps it when any of `tries` runs fails.
  const CasePool::Task still_fails_on = [&](CaseRunner& on, const harness::Scenario& s) -> std::optional<std::string> {
    for (int t = 0; t < tries; ++t)
      if (auto f = fails_once_on(on, s)) return f;
    return std::nullopt;
  };
  // Candidates run side by side on isolated workers: the same minimal case, in fewer rounds.
  ShrinkInParallel parallel;
  if (options.shrink_workers > 1 && runner.isolated() && !failing.differential && options.isolation) {
    pool.emplace(runner, backend, *options.isolation, options.shrink_workers);
    parallel.width = pool->width();
    parallel.fails = [&](const std::vector<const harness::Scenario*>& batch) { return pool->run(batch, still_fails_on); };
  }
  const auto progress = [&](const ShrinkStep& step) {
    out << "fuzz:   shrink step " << step.accepted << ": " << step.edit << "; " << step.tried << " tried, "
        << static_cast<int>(step.elapsed_seconds) << " s: " << describe(step.scenario) << "\n" << std::flush;
  };
  return shrink(drawn, [&](const harness::Scenario& s) { return still_fails_on(runner, s); }, options.shrink_budget,
                progress, *failing.failure(), parallel);
}

}  // namespace

std::string describe(const harness::Scenario& s) {
  int nested = 0;
  for (const auto& [path, spec] : s.fully_shard) nested += path.find('.', path.find('.') + 1) != std::string::npos;
  int checkpointed = 0;
  for (const auto& b : s.blocks) checkpointed += b.ac != ac::CheckpointMode::None;
  return std::to_string(s.blocks.size()) + " block(s) (" + std::to_string(checkpointed) + " checkpointed), " +
         std::to_string(s.fully_shard.size()) + " fully_shard group(s) (" + std::to_string(nested) +
         " nested inside blocks), world " + std::to_string(s.world_size) + ", " + std::to_string(s.steps) +
         " step(s), dim " + std::to_string(s.dims.dim);
}

namespace {

// Runs of one case: how many failed as the finding, and the first that did (its message and run,
// which blame reads: no further run needed).
struct Replays {
  int failed = 0;
  std::optional<CaseCheck> first;
};

Replays replay(CaseRunner& runner, const harness::Scenario& s, const std::string& failure, int runs) {
  Replays r;
  for (int i = 0; i < runs; ++i) {
    CaseCheck c = runner.check(s);
    if (c.failure() != failure) continue;
    if (r.failed++ == 0) r.first = std::move(c);
  }
  return r;
}

// `drawn` with its schedule replaced by the switches its run took (seed 0): the same run, decision
// for decision, in a form the shrinker reduces (canonical first, then fewer switches) before and
// between the generator's own shrinks. Unchanged off the scheduled threads backend.
rc::Shrinkable<harness::Scenario> pin_schedule(const rc::Shrinkable<harness::Scenario>& drawn,
                                               const comm::ScheduleRecord& record) {
  if (!record.scheduled || !drawn.value().schedule ||
      record.switches.size() > static_cast<std::size_t>(harness::ScenarioLimits::kMaxScheduleSwitches))
    return drawn;
  return with_schedule_shrinks(drawn, harness::ScheduleSpec::replaying(record));
}

}  // namespace

std::string Finding::flakiness() const {
  if (!flaky()) return "";
  return "flaky: failed " + std::to_string(replay_failures) + " of " + std::to_string(replays) + " replays";
}

std::optional<Finding> shrink_case(const CampaignOptions& options, harness::Backend& backend, CaseRunner& runner,
                                   const rc::Shrinkable<harness::Scenario>& drawn, const CaseCheck& failing, int k,
                                   const std::function<bool()>& overtaken, std::ostream& out) {
  Finding f;
  f.property = *failing.property;
  f.case_index = k;
  const std::string failure = *failing.failure();
  // A failure that depends on thread timing cuts both ways: replay the case before shrinking it, and
  // shrink a flaky one under repetitions.
  const Replays first = replay(runner, drawn.value(), failure, 1);
  const bool flaky_case = first.failed == 0;
  if (flaky_case) out << "fuzz: case " << k << " did not fail again on its replay: shrinking it under " << kFlakyTries
                      << " tries per candidate\n" << std::flush;
  // A seeded schedule becomes the switches it took, so the shrinker can drop them one by one.
  const rc::Shrinkable<harness::Scenario> pinned = flaky_case ? drawn : pin_schedule(drawn, first.first->schedule);
  std::optional<CasePool> pool;
  try {
    f.shrink = shrink_keeping_failure(options, backend, runner, pinned, failing, overtaken, pool,
                                      flaky_case ? kFlakyTries : 1, out);
  } catch (const CaseOvertaken&) {
    out << "fuzz: case " << k << " is past a lower failing case of another job: its shrink is dropped\n" << std::flush;
    return std::nullopt;
  }
  f.minimal = f.shrink.minimal;
  // The minimal case's replays say whether the finding is deterministic; one that never fails again
  // falls back to the case that failed, with the message it failed with: a finding is never written
  // as a passing reproducer, nor with an empty message.
  // A process that hung costs its wall-clock limit per replay: fewer of those.
  const int replays = f.property == harness::kProcessSurvives ? kReplaysOfADeadProcess : kReplays;
  Replays r = replay(runner, f.minimal, failure, replays);
  if (r.failed == 0) {
    f.minimal = drawn.value();
    r = replay(runner, f.minimal, failure, replays);
  }
  f.replays = replays;
  f.replay_failures = r.failed;
  if (r.failed == 0) {
    f.replay_failures = 1;  // the campaign's own run
    f.replays = replays + 1;
  }
  f.message = r.first ? r.first->message : failing.message;
  if (f.message.empty()) f.message = failing.message.empty() ? "failed " + failure + " (no message)" : failing.message;
  if (f.flaky()) f.message += " [" + f.flakiness() + "]";
  const CaseCheck minimal_check = r.first ? std::move(*r.first) : runner.check(f.minimal);
  nlohmann::json differential;
  if (minimal_check.differential) differential = attribute_differential(*runner.differential(), *minimal_check.differential, f);
  else blame_natively(backend, runner, minimal_check, f);
  f.path = write_reproducer(f.minimal, f.property, f.message, options.out_dir,
                            options.command.empty() ? "shardfuzz fuzz --seed " + std::to_string(options.seed) : options.command,
                            f.zoo, &runner, differential, pool ? &*pool : nullptr);
  f.report = write_finding_report(f, backend, options.isolation, out);
  return f;
}

}  // namespace shardfuzz::fuzz
