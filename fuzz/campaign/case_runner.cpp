// In-process or isolated runs of the campaign's cases, blames and verdicts. The isolated worker
// serves JSON requests {"op": "check" | "blame" | "verdict", "scenario": {...}, "profile": P,
// "up_to": PROPERTY}.
#include "fuzz/campaign/case_runner.h"

#include "harness/properties/property.h"
#include "harness/reproducer.h"
#include "harness/run/run_record_json.h"
#include "harness/scenario/scenario_json.h"
#include "harness/backends/threads/threads_backend.h"

namespace shardfuzz::fuzz {
namespace {

using nlohmann::json;

// Judged up to `up_to` (every property when ""); the embedded default then runs without the
// reference when no property judged needs it.
CaseCheck check_here(const harness::Scenario& scenario, harness::Backend& backend, const std::string& up_to = "") {
  CaseCheck c;
  harness::RunOptions without_reference;
  without_reference.reference = false;
  harness::RunRecord run = backend.is_embedded_default() && !harness::needs_reference(up_to)
                               ? harness::run_threads(scenario, without_reference)
                               : backend.run(scenario);
  const auto verdicts = harness::check_properties(scenario, run, up_to);
  if (const harness::Verdict* f = harness::first_failure(verdicts)) {
    c.property = f->property;
    c.message = f->message;
  }
  c.schedule = run.schedule;
  if (backend.is_embedded_default()) c.run = std::move(run);
  return c;
}

// The worker's side (runs in the child). It keeps the run of its last failing check, for a blame
// of the same scenario that follows it (a shrink hunting a row asks for both); a passing check's
// run is freed after its reply is sent (a millisecond of the standard small case's timeline).
harness::isolation::WorkerReply serve(const std::string& text) {
  static std::string last_failing;  // the scenario's JSON text
  static std::optional<harness::RunRecord> last_run;
  const json request = json::parse(text);
  const std::string op = request.at("op").get<std::string>();
  const harness::Scenario scenario = harness::scenario_from_json(request.at("scenario"));
  if (op == "check") {
    CaseCheck c = check_here(scenario, harness::threads_backend(), request.value("up_to", ""));
    last_failing = c.property && c.run ? request.at("scenario").dump() : "";
    last_run = c.property ? std::move(c.run) : std::nullopt;
    json out{{"property", c.property ? *c.property : ""}, {"message", c.message}};
    if (c.schedule.scheduled) out["schedule"] = harness::to_json(c.schedule);
    harness::isolation::WorkerReply reply = out.dump();
    if (!c.property && c.run)  // a failing check's run was moved into last_run above
      reply.after_sent = [run = std::make_shared<harness::RunRecord>(std::move(*c.run))]() mutable { run.reset(); };
    return reply;
  }
  if (op == "blame") {
    const bool ran = last_run && request.at("scenario").dump() == last_failing;
    json out = json::array();
    for (const auto& b : harness::zoo::blame(scenario, ran ? &*last_run : nullptr, request.value("only_row", "")))
      out.push_back({{"switch", b.switch_name}, {"row", b.row}, {"injected", b.injected}, {"upstream", b.upstream}});
    return out.dump();
  }
  if (op == "verdict") return harness::verdict_under(scenario, request.at("profile").get<std::string>());
  throw std::invalid_argument("case worker: unknown op '" + op + "'");
}

}  // namespace

CaseRunner::CaseRunner(harness::Backend& backend, std::optional<harness::isolation::Limits> isolation)
    : backend_(backend), isolation_(backend.is_embedded_default() ? isolation : std::nullopt) {
  if (isolation_) worker_ = std::make_unique<harness::isolation::WorkerProcess>(&serve);
}

std::optional<std::string> CaseRunner::in_worker(const json& request, std::string* why) {
  const harness::isolation::ChildOutcome o = worker_->call(request.dump(), *isolation_);
  if (o.returned()) return o.output;
  if (o.kind == harness::isolation::ChildOutcome::Kind::Threw)  // the harness's own bug: say it loudly
    throw std::runtime_error("case worker: " + o.output);
  if (why) *why = "the case's process " + o.describe(*isolation_);
  return std::nullopt;
}

namespace {

CaseCheck check_differential(const harness::Scenario& scenario, harness::differential::Differential& differential) {
  CaseCheck c;
  auto dc = std::make_shared<harness::differential::DifferentialCase>(differential.run(scenario));
  if (dc->divergence) {
    c.property = harness::differential::kMatchesTorch;
    c.message = dc->divergence->message();
  } else if (dc->both_fail) {
    c.property = dc->both_fail->property;
    c.message = dc->both_fail->message;
  }
  c.differential = std::move(dc);
  return c;
}

}  // namespace

CaseCheck CaseRunner::check(const harness::Scenario& scenario, const std::string& up_to) {
  if (differential_) return check_differential(scenario, *differential_);
  if (!isolation_) return check_here(scenario, backend_, up_to);
  CaseCheck c;
  std::string why;
  if (const auto reply =
          in_worker({{"op", "check"}, {"scenario", harness::to_json(scenario)}, {"up_to", up_to}}, &why)) {
    const json j = json::parse(*reply);
    if (!j.at("property").get<std::string>().empty()) c.property = j.at("property").get<std::string>();
    c.message = j.at("message").get<std::string>();
    if (j.contains("schedule")) c.schedule = harness::schedule_record_from_json(j.at("schedule"));
  } else {
    c.property = kProcessSurvives;
    c.message = why;
  }
  return c;
}

std::vector<harness::zoo::Blame> CaseRunner::blame(const harness::Scenario& scenario, const CaseCheck* failing,
                                                   const std::string& only_row) {
  // A case that killed its process has no run to blame a switch on.
  if (failing && failing->property == std::string(kProcessSurvives)) return {};
  if (!isolation_) return harness::zoo::blame(scenario, failing && failing->run ? &*failing->run : nullptr, only_row);
  std::vector<harness::zoo::Blame> blames;
  const auto reply =
      in_worker({{"op", "blame"}, {"scenario", harness::to_json(scenario)}, {"only_row", only_row}}, nullptr);
  if (!reply) return blames;  // unattributed
  for (const auto& j : json::parse(*reply))
    blames.push_back({j.at("switch").get<std::string>(), j.at("row").get<std::string>(), j.at("injected").get<bool>(),
                      j.at("upstream").get<std::string>()});
  return blames;
}

std::string CaseRunner::verdict_under(const harness::Scenario& scenario, const std::string& profile) {
  if (!isolation_) return harness::verdict_under(scenario, profile);
  const auto reply =
      in_worker({{"op", "verdict"}, {"scenario", harness::to_json(scenario)}, {"profile", profile}}, nullptr);
  return reply ? *reply : kProcessSurvives;
}

}  // namespace shardfuzz::fuzz
