// The soak run and its check.
#include "harness/soak/soak.h"

#include "harness/backends/threads/threads_backend.h"

#include <algorithm>
#include <sstream>

namespace shardfuzz::harness {
namespace {

std::string mib(int64_t bytes) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(2);
  os << bytes / 1048576.0 << " MiB";
  return os.str();
}

}  // namespace

SoakReport check_soak(const Scenario& sc, const RunRecord& run) {
  SoakReport r;
  if (!run.ok()) {
    r.ok = false;
    r.message = "the run failed: " + run.error;
    return r;
  }
  if (sc.steps < kMinSoakSteps || run.host_rss_bytes.size() < static_cast<std::size_t>(sc.steps)) {
    r.skipped = true;
    r.message = "a soak needs " + std::to_string(kMinSoakSteps) + " steps or more, each with its memory recorded";
    return r;
  }
  std::ostringstream os;
  for (const RankRecord& rank : run.ranks) {
    const auto& b = rank.step_end_bytes;
    for (std::size_t s = 2; s < b.size(); ++s)
      if (b[s] != b[1]) {
        r.ok = false;
        os << "rank " << rank.rank << ": allocator bytes at the end of step " << s + 1 << " are " << b[s]
           << ", at the end of step 2 " << b[1] << " (" << (b[s] > b[1] ? "+" : "") << b[s] - b[1]
           << " B); memory does not stay flat";
        r.message = os.str();
        return r;
      }
  }
  r.warmup_steps = std::max(2, sc.steps / 10);
  r.rss_at_warmup = run.host_rss_bytes[static_cast<std::size_t>(r.warmup_steps - 1)];
  r.rss_at_end = run.host_rss_bytes.back();
  r.rss_tolerance = std::max(kSoakRssSlackBytes, r.rss_at_warmup / 100);
  const int64_t growth = r.rss_at_end - r.rss_at_warmup;
  os << "allocator bytes at every step end from step 2 to " << sc.steps << " equal on every rank (rank 0: "
     << run.ranks.front().step_end_bytes[1] << " B); resident set " << mib(r.rss_at_warmup) << " at step "
     << r.warmup_steps << ", " << mib(r.rss_at_end) << " at step " << sc.steps << " (" << (growth >= 0 ? "+" : "")
     << mib(growth) << ", tolerance " << mib(r.rss_tolerance) << ")";
  r.ok = growth <= r.rss_tolerance;
  r.message = os.str() + (r.ok ? "" : ": the resident set grows");
  return r;
}

SoakReport run_soak(const Scenario& sc) {
  RunOptions lean;
  lean.record_timeline = false;
  const RunRecord soaked = run_threads(sc, lean);
  SoakReport report = check_soak(sc, soaked);
  report.seconds = soaked.seconds;
  return report;
}

}  // namespace shardfuzz::harness
