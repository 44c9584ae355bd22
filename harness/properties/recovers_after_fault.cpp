// Property: after a recoverable fault (oom, exception) the runtime resets and the step runs again.
// For every recovery of every rank: no group is left unsharded or holding a pending all-gather;
// the ledger holds none of a step's buffers, and what lives across steps (shards, gradients,
// optimizer state) as at the failed run's start; the allocator changed by exactly what the ledger
// did (nothing unaccounted stays); and the run then completed every step (parity_with_reference
// judges the values it reached).
#include "harness/properties/property.h"

#include <algorithm>
#include <sstream>

namespace shardfuzz::harness {
namespace {

Verdict fail(std::string message) { return {"recovers_after_fault", false, false, std::move(message)}; }

// What a reset does to each ledger kind: a step's buffers are freed (the next forward gathers
// again, a root left unsharded between steps included); what lives across steps is put back as it
// was (shards, gradients and optimizer state from the step's checkpoint); a cache kept for the
// module's life (the world-1 persistent all-gather buffer) stays, and may be new.
enum class Lifetime { Step, AcrossSteps, Cache };
Lifetime lifetime(memory::BufferKind kind) {
  switch (kind) {
    case memory::BufferKind::ShardedParam:
    case memory::BufferKind::Grad:
    case memory::BufferKind::OptimizerState: return Lifetime::AcrossSteps;
    case memory::BufferKind::PersistentAllGather: return Lifetime::Cache;
    default: return Lifetime::Step;
  }
}

std::string names(const std::vector<std::string>& groups) {
  std::string out;
  for (const auto& g : groups) out += (out.empty() ? "'" : ", '") + g + "'";
  return out;
}

}  // namespace

Verdict check_recovers_after_fault(const Scenario& sc, const RunRecord& run) {
  if (!run.recovery) return {"recovers_after_fault", true, true, "no recoverable fault planned, or recovery off"};
  int recoveries = 0;
  double slowest = 0;
  for (const RankRecord& r : run.ranks) {
    for (const RecoveryRecord& rec : r.recoveries) {
      ++recoveries;
      slowest = std::max(slowest, rec.recovered_at_seconds - rec.caught_at_seconds);
      const std::string where = "rank " + std::to_string(r.rank) + ", step " + std::to_string(rec.step + 1) +
                                " (run " + std::to_string(rec.attempt + 1) + "), after the reset from '" + rec.error +
                                "'";
      if (!rec.unsharded_after_reset.empty())
        return fail(where + ": groups " + names(rec.unsharded_after_reset) + " are still unsharded");
      if (!rec.pending_all_gather_after_reset.empty())
        return fail(where + ": groups " + names(rec.pending_all_gather_after_reset) + " still hold a pending all-gather");
      for (std::size_t k = 0; k < rec.ledger_after_reset.size(); ++k) {
        const auto kind = static_cast<memory::BufferKind>(k);
        const int64_t before = rec.ledger_at_step_begin[k], after = rec.ledger_after_reset[k];
        const Lifetime life = lifetime(kind);
        if (life == Lifetime::Step ? after == 0 : life == Lifetime::Cache ? after >= before : after == before) continue;
        std::ostringstream os;
        os << where << ": the ledger holds " << after << " B of " << memory::to_string(kind) << " ("
           << (life == Lifetime::Step ? "a step's buffer: the reset frees it"
                                      : "kept across steps: " + std::to_string(before) + " B at the step's start")
           << ")";
        return fail(os.str());
      }
      int64_t ledger_change = 0;
      for (std::size_t k = 0; k < rec.ledger_after_reset.size(); ++k)
        ledger_change += rec.ledger_after_reset[k] - rec.ledger_at_step_begin[k];
      const int64_t change = rec.bytes_after_reset - rec.bytes_at_step_begin;
      if (change != ledger_change) {
        std::ostringstream os;
        os << where << ": the allocator holds " << rec.bytes_after_reset << " B, " << rec.bytes_at_step_begin
           << " B at the step's start (" << (change > 0 ? "+" : "") << change << " B), the ledger "
           << (ledger_change > 0 ? "+" : "") << ledger_change << " B";
        return fail(os.str());
      }
    }
    if (static_cast<int>(r.losses.size()) != sc.steps)
      return fail("rank " + std::to_string(r.rank) + " completed " + std::to_string(r.losses.size()) + " of " +
                  std::to_string(sc.steps) + " steps");
  }
  if (recoveries == 0) return {"recovers_after_fault", true, true, "no recoverable fault fired"};
  std::ostringstream os;
  os << recoveries << " recoveries over " << run.ranks.size()
     << " ranks: every rank reset to its step's start (groups sharded, nothing pending, ledger and allocator "
        "back) and completed every step; slowest recovery "
     << static_cast<int>(slowest * 1000) << " ms";
  return {"recovers_after_fault", true, false, os.str()};
}

}  // namespace shardfuzz::harness
