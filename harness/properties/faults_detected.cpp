// Property: a planned fault is detected. When a fault that must stop the run fires (a collective
// error, a hang, a crash, a straggler at or past the deadline), every rank fails — none completes,
// none hangs — each peer's error names the faulty rank, and each peer learns of it within the
// collective deadline plus a stated slack (detection latency, reported). A rank whose own planned
// fault fired fails by it: it needs to name no one and is exempt from the bound (a hang or a
// straggler stays away by design).
#include "harness/properties/property.h"

#include <algorithm>
#include <regex>
#include <sstream>

namespace shardfuzz::harness {
namespace {

Verdict fail(std::string message) { return {"faults_detected", false, false, std::move(message)}; }

// "rank 2", "ranks [2", "ranks [0, 2": the error names rank `r`.
bool names_rank(const std::string& error, int r) {
  const std::regex pattern("ranks? \\[?(\\d+, )*" + std::to_string(r) + "\\b");
  return std::regex_search(error, pattern);
}

std::string describe(const FaultSpec& spec, const FiredFault& f) {
  if (spec.kind == "oom")
    return "planned oom of rank " + std::to_string(f.rank) + " (" + f.op + ")";
  if (spec.kind == "exception")
    return "planned exception of rank " + std::to_string(f.rank) + " in the " + spec.pass + " of " + f.group +
           " at step " + std::to_string(spec.step + 1);
  return "planned " + spec.kind + " of rank " + std::to_string(f.rank) + " at its collective " +
         std::to_string(spec.collective) + " (" + f.op + " on group " + f.group + ")";
}

}  // namespace

Verdict check_faults_detected(const Scenario& sc, const RunRecord& run) {
  if (sc.faults.empty()) return {"faults_detected", true, true, "no faults planned"};
  // The first fault that must stop the run, and every rank whose own such fault fired (several
  // faults can fire at once: each of those ranks fails by its own).
  const FiredFault* fired = nullptr;
  std::vector<int> faulty;
  for (const FiredFault& f : run.fired_faults)
    if (sc.faults.at(static_cast<std::size_t>(f.fault)).must_be_detected(run.deadline_ms)) {
      faulty.push_back(f.rank);
      if (!fired || f.at_seconds < fired->at_seconds) fired = &f;
    }
  if (!fired)
    return {"faults_detected", true, true,
            run.fired_faults.empty() ? "no planned fault fired (the run has fewer collectives)"
                                     : "only stragglers under the deadline fired (liveness and parity judge them)"};
  const FaultSpec& spec = sc.faults.at(static_cast<std::size_t>(fired->fault));
  const std::string what = describe(spec, *fired);
  if (run.ok()) return fail(what + " fired, yet every rank completed: not detected");
  const double bound = run.deadline_ms / 1000.0 + Tolerances::kDetectionSlackSeconds;
  std::vector<double> latencies;
  for (const RankRecord& r : run.ranks) {
    const std::string who = "rank " + std::to_string(r.rank);
    if (r.error.empty()) return fail(what + ": " + who + " completed without an error");
    const bool own = std::count(faulty.begin(), faulty.end(), r.rank) > 0;
    if (!own && std::none_of(faulty.begin(), faulty.end(), [&](int f) { return names_rank(r.error, f); }))
      return fail(what + ": " + who + "'s error does not name rank " + std::to_string(fired->rank) + ": " + r.error);
    const double latency = r.failed_at_seconds - fired->at_seconds;
    if (own) continue;  // it failed by its own fault (a hang or straggler stays away by design)
    latencies.push_back(latency);
    if (latency > bound) {
      std::ostringstream os;
      os << what << ": " << who << " learned of it " << latency << " s after it fired, past the deadline "
         << run.deadline_ms << " ms + " << Tolerances::kDetectionSlackSeconds << " s";
      return fail(os.str());
    }
  }
  if (latencies.empty()) return {"faults_detected", true, false, what + ": every rank failed by its own planned fault"};
  std::sort(latencies.begin(), latencies.end());
  std::ostringstream os;
  os << what << " detected on every rank: latency median " << static_cast<int>(latencies[latencies.size() / 2] * 1000)
     << " ms, max " << static_cast<int>(latencies.back() * 1000) << " ms (deadline " << run.deadline_ms << " ms)";
  return {"faults_detected", true, false, os.str()};
}

}  // namespace shardfuzz::harness
