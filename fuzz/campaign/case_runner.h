// How the campaign runs a case: in this process, or isolated — in a persistent worker child under a
// per-case wall-clock and memory limit (harness/isolation/worker_process.h), so a segfault, abort,
// runaway allocation or hang of a case is a finding of the property `process_survives` with its
// scenario, never the end of the campaign; the next case gets a fresh worker. Checks, blame and the
// reproducer's expected verdicts all go through here, so with isolation on the campaign's own
// process never runs the runtime (and stays single-threaded, as fork needs).
#pragma once

#include "harness/backends/backend.h"
#include "harness/differential/differential.h"
#include "harness/properties/property.h"
#include "harness/isolation/worker_process.h"
#include "harness/run/run_record.h"
#include "harness/scenario/scenario.h"
#include "harness/zoo/blame.h"

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::fuzz {

// The property a case fails when its isolated process dies, hangs past its wall-clock limit or
// passes its memory limit.
using harness::kProcessSurvives;

struct CaseCheck {
  std::optional<std::string> property;  // the first failing property (nullopt: all passed)
  std::string message;
  std::optional<harness::RunRecord> run;  // kept when run in this process on the native runtime
  // What the threads backend's schedule did (in this process or in the isolated worker): its
  // switches pin the interleaving, so the case replays exactly with seed 0 (shrink_case).
  comm::ScheduleRecord schedule;
  // A differential case: both sides, and the divergence (property matches_torch) or the property
  // both fail.
  std::shared_ptr<const harness::differential::DifferentialCase> differential;
  // What a shrink step must reproduce: the property, or for a divergence the property and the
  // divergence's identity (its aspect and event names). nullopt: the case passed.
  std::optional<std::string> failure() const {
    if (property && differential && differential->divergence) return *property + ":" + differential->divergence->identity;
    return property;
  }
};

class CaseRunner {
 public:
  // `isolation` applies to the embedded default only (Backend::is_embedded_default: the torch and
  // process backends already run each case in processes of their own). `backend` must outlive it.
  CaseRunner(harness::Backend& backend, std::optional<harness::isolation::Limits> isolation);

  bool isolated() const { return isolation_.has_value(); }
  // Differential mode: check() runs each case on both sides of `differential` (native in this
  // process) instead of on the backend; it must outlive this runner.
  void set_differential(harness::differential::Differential* differential) { differential_ = differential; }
  harness::differential::Differential* differential() const { return differential_; }
  int workers_started() const { return worker_ ? worker_->starts() : 0; }
  pid_t worker_pid() const { return worker_ ? worker_->pid() : 0; }  // the live isolated worker's, else 0
  // Starts the isolated worker now if none is alive (fork needs this process single-threaded:
  // fuzz/campaign/case_pool.h calls it before its threads exist).
  void start_worker() {
    if (worker_) worker_->ensure_started();
  }
  // `up_to`: judge the properties in order up to that one only (a shrink step reproducing it: see
  // harness::check_properties), without the unsharded reference when parity comes later.
  CaseCheck check(const harness::Scenario& scenario, const std::string& up_to = "");
  // Blame always runs natively; `failing` is reused when it holds a native run (isolated: the
  // worker reuses the run of its last check when that was this scenario). `only_row`: see
  // harness::zoo::blame.
  std::vector<harness::zoo::Blame> blame(const harness::Scenario& scenario, const CaseCheck* failing = nullptr,
                                         const std::string& only_row = "");
  // The first failing property under `profile` on the native runtime, or "pass".
  std::string verdict_under(const harness::Scenario& scenario, const std::string& profile);

 private:
  // Runs `request` in the worker: the reply, or nullopt with `why` when the worker died on it.
  std::optional<std::string> in_worker(const nlohmann::json& request, std::string* why);

  harness::Backend& backend_;
  std::optional<harness::isolation::Limits> isolation_;
  std::unique_ptr<harness::isolation::WorkerProcess> worker_;
  harness::differential::Differential* differential_ = nullptr;
};

}  // namespace shardfuzz::fuzz
