// Property: a planned fault is detected. When a fault that must stop the run fires (a collective
// error, a hang, a crash, a straggler at or past the deadline; an oom or exception when the ranks do
// not recover), every rank fails — none completes, none hangs — each peer's error names the faulty
// rank, and each peer learns of it within the collective deadline plus a stated slack (detection
// latency, reported). An oom or exception the ranks recover from is detected when every rank
// caught it (its own, or an error naming the faulty rank) within the same bound, in the recovery of
// that step (recovers_after_fault judges the recovery). A rank whose own planned
// fault fired fails by it: it needs to name no one and is exempt from the bound (a hang or a
// straggler stays away by design).
#include "harness/properties/planned_faults.h"
#include "harness/properties/property.h"

#include <algorithm>
#include <regex>
#include <sstream>

namespace shardfuzz::harness {
namespace {

Verdict fail(std::string message) { return {"faults_detected", false, false, std::move(message)}; }

// "rank 2", "ranks [2", "ranks [0, 2": the error names rank `r`.
// "rank R", or R in a list "ranks [A, R]" whose entries may carry what the rank last did
// ("missing ranks [0 (last entered sequence 5: all_gather_into_tensor(numel=192, float)), 1 (...)]").
bool names_rank(const std::string& error, int r) {
  static const std::string entry = "\\d+(?: \\((?:[^()]|\\([^()]*\\))*\\))?, ";
  const std::regex pattern("ranks? \\[?(?:" + entry + ")*" + std::to_string(r) + "\\b");
  return std::regex_search(error, pattern);
}

std::string describe(const FaultSpec& spec, const FiredFault& f) {
  if (spec.in_allocator()) return "planned oom of rank " + std::to_string(f.rank) + " (" + f.op + ")";
  if (const ModuleFault* m = spec.in_module())
    return "planned exception of rank " + std::to_string(f.rank) + " in the " + name_of(m->pass) + " of " + f.group +
           " at step " + std::to_string(m->step + 1);
  return "planned " + spec.kind_name() + " of rank " + std::to_string(f.rank) + " at its collective " +
         std::to_string(spec.at_collective()->collective) + " (" + f.op + " on group " + f.group + ")";
}

std::string latency_summary(std::vector<double> latencies) {
  std::sort(latencies.begin(), latencies.end());
  std::ostringstream os;
  os << "latency median " << static_cast<int>(latencies[latencies.size() / 2] * 1000) << " ms, max "
     << static_cast<int>(latencies.back() * 1000) << " ms";
  return os.str();
}

// A recovered fault (oom, exception under RunRecord::recovery) is detected when every rank caught
// an error in the recovery of its step — its own, or one naming the faulty rank — within the bound.
// Returns the failure, or "" with `summary` filled.
std::string check_recovered(const Scenario& sc, const RunRecord& run, std::string& summary) {
  const double bound = run.deadline_ms / 1000.0 + Tolerances::kDetectionSlackSeconds;
  const bool stopped = std::any_of(run.fired_faults.begin(), run.fired_faults.end(), [&](const FiredFault& f) {
    return must_be_detected(sc, run, f);
  });
  std::vector<double> latencies;
  int detected = 0;
  for (const FiredFault& f : run.fired_faults) {
    const FaultSpec& spec = sc.faults.at(static_cast<std::size_t>(f.fault));
    if (!spec.is_recoverable()) continue;
    const std::string what = describe(spec, f);
    // Faults of several ranks can fire in one run of the step: each of those ranks caught its own,
    // and a peer may name any of them.
    std::vector<int> faulty;
    for (const FiredFault& g : run.fired_faults)
      if (sc.faults.at(static_cast<std::size_t>(g.fault)).is_recoverable() && g.step == f.step)
        faulty.push_back(g.rank);
    bool overtaken = false;
    for (const RankRecord& r : run.ranks) {
      const std::string who = "rank " + std::to_string(r.rank);
      const auto caught = std::find_if(r.recoveries.begin(), r.recoveries.end(), [&](const RecoveryRecord& rec) {
        return rec.step == f.step && rec.recovered_at_seconds >= f.at_seconds;  // the run of the step it fired in
      });
      if (caught == r.recoveries.end()) {
        // A fault that stops the run can end it before the recovery: the check below judges that one.
        if (!r.error.empty() && stopped) {
          overtaken = true;
          break;
        }
        return what + ": " + who + " never recovered from it" + (r.error.empty() ? "" : " (" + r.error + ")");
      }
      if (std::count(faulty.begin(), faulty.end(), r.rank) > 0) continue;
      if (std::none_of(faulty.begin(), faulty.end(), [&](int g) { return names_rank(caught->error, g); }))
        return what + ": " + who + "'s error does not name rank " + std::to_string(f.rank) + ": " + caught->error;
      // A peer may have caught a fault of another rank before this one fired, in the same run.
      const double latency = std::max(0.0, caught->caught_at_seconds - f.at_seconds);
      latencies.push_back(latency);
      if (latency > bound) {
        std::ostringstream os;
        os << what << ": " << who << " learned of it " << latency << " s after it fired, past the deadline "
           << run.deadline_ms << " ms + " << Tolerances::kDetectionSlackSeconds << " s";
        return os.str();
      }
    }
    if (!overtaken) ++detected;
  }
  if (detected == 0) return "";
  summary = std::to_string(detected) + " recovered fault" + (detected > 1 ? "s" : "") + " detected on every rank" +
            (latencies.empty() ? "" : ": " + latency_summary(latencies));
  return "";
}

}  // namespace

Verdict check_faults_detected(const Scenario& sc, const RunRecord& run) {
  if (sc.faults.empty()) return {"faults_detected", true, true, "no faults planned"};
  std::string recovered;
  if (run.recovery) {
    if (std::string failure = check_recovered(sc, run, recovered); !failure.empty()) return fail(failure);
  }
  // The first fault that must stop the run, and every rank whose own such fault fired (several
  // faults can fire at once: each of those ranks fails by its own).
  const FiredFault* fired = nullptr;
  std::vector<int> faulty;
  for (const FiredFault& f : run.fired_faults)
    if (must_be_detected(sc, run, f)) {
      faulty.push_back(f.rank);
      if (!fired || f.at_seconds < fired->at_seconds) fired = &f;
    }
  if (!fired) {
    if (!recovered.empty()) return {"faults_detected", true, false, recovered};
    const bool synchronized = std::any_of(run.fired_faults.begin(), run.fired_faults.end(), [&](const FiredFault& f) {
      return sc.faults.at(static_cast<std::size_t>(f.fault)).must_be_detected(run.deadline_ms, run.recovery);
    });
    return {"faults_detected", true, true,
            run.fired_faults.empty() ? "no planned fault fired (the run has fewer collectives)"
            : synchronized ? "every rank stalled at the same collective: a synchronized stall leaves no peer waiting, "
                             "nothing to detect"
                           : "only stragglers under the deadline fired (liveness and parity judge them)"};
  }
  const FaultSpec& spec = sc.faults.at(static_cast<std::size_t>(fired->fault));
  const std::string what = describe(spec, *fired);
  if (run.ok()) return fail(what + " fired, yet every rank completed: not detected");
  const double bound = run.deadline_ms / 1000.0 + Tolerances::kDetectionSlackSeconds;
  std::vector<double> latencies;
  std::vector<int> finished_before;  // completed, their collectives all done before the fault
  for (const RankRecord& r : run.ranks) {
    const std::string who = "rank " + std::to_string(r.rank);
    if (r.error.empty()) {
      // A rank that had finished every collective before the fault fired has nothing that could
      // stop it (collectives outside the fault's group go on in FSDP2 too): it completes, having
      // entered no collective after the world's abort. One that entered any and still completed
      // was not reached by the abort.
      if (r.collectives_after_abort == 0) {
        finished_before.push_back(r.rank);
        continue;
      }
      return fail(what + ": " + who + " completed without an error" +
                  (r.collectives_after_abort > 0
                       ? " after entering " + std::to_string(r.collectives_after_abort) +
                             " collective(s) once the world was aborted"
                       : ""));
    }
    // Its own recoverable fault counts too: a rank whose oom or exception fired while a peer's fault
    // stopped the run may end with its own error (the recovery it started never completes).
    const bool own = std::count(faulty.begin(), faulty.end(), r.rank) > 0 ||
                     std::any_of(run.fired_faults.begin(), run.fired_faults.end(), [&](const FiredFault& f) {
                       return f.rank == r.rank && sc.faults.at(static_cast<std::size_t>(f.fault)).is_recoverable() &&
                              names_rank(r.error, r.rank);
                     });
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
  std::string also = recovered.empty() ? "" : "; " + recovered;
  if (!finished_before.empty()) {
    also += "; ranks that had finished every collective before it and completed:";
    for (int r : finished_before) also += " " + std::to_string(r);
  }
  if (latencies.empty())
    return {"faults_detected", true, false, what + ": every rank failed by its own planned fault" + also};
  return {"faults_detected", true, false,
          what + " detected on every rank: " + latency_summary(latencies) + " (deadline " +
              std::to_string(run.deadline_ms) + " ms)" + also};
}

}  // namespace shardfuzz::harness
