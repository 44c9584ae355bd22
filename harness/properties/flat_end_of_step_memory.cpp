// Property 2: end-of-step memory is flat across steps. Every ledger kind holds the same bytes at
// the end of every step from step 1 on (the ledger names each buffer it counts: optimizer state
// is made in step 1's optimizer step, a transient kind that grows leaks, and the kind is named);
// the allocator's bytes are flat from step 2 on (step 1 may create one-time buffers the ledger
// does not count). And exactly, at any width (the allocator comparison only sees a buffer left
// behind once it passes its tolerance), at a step's zero_grad: no sharded gradient survives it (it
// sets every one to None, as torch's default set_to_none), and no reduce-scatter input survives
// the step's last backward (its final callback, is_last_backward, drops the pending reduce-scatter
// state; only a backward with is_last_backward False keeps it, for the next micro-batch).
#include "harness/properties/property.h"

#include <cstdlib>
#include <utility>

namespace shardfuzz::harness {
namespace {

using memory::Category;
using memory::Event;

constexpr const char* kName = "flat_end_of_step_memory";

std::string ledger_growth(const RankRecord& r) {
  const memory::TimelineEvent* prev = nullptr;
  for (const auto& e : r.timeline) {
    if (e.category != Category::Train || e.event != Event::StepEnd) continue;
    if (prev)
      for (int k = 0; k < memory::kBufferKinds; ++k) {
        const auto i = static_cast<std::size_t>(k);
        if (e.ledger[i] == prev->ledger[i]) continue;
        return "rank " + std::to_string(r.rank) + " step " + std::to_string(e.step + 1) + ": " +
               memory::to_string(static_cast<memory::BufferKind>(k)) + " holds " + std::to_string(e.ledger[i]) +
               " bytes at step end vs " + std::to_string(prev->ledger[i]) + " at the end of step " +
               std::to_string(prev->step + 1) + " (" + std::to_string(e.ledger[i] - prev->ledger[i]) +
               " bytes; the same schedule ends every step holding the same buffers)";
      }
    prev = &e;
  }
  return "";
}

std::string left_at_zero_grad(const RankRecord& r) {
  using memory::BufferKind;
  const std::pair<BufferKind, const char*> gone[] = {
      {BufferKind::Grad, "zero_grad sets every sharded gradient to None"},
      {BufferKind::ReduceScatterInput, "the step's last backward drops the pending reduce-scatter state"}};
  for (const auto& e : r.timeline) {
    if (e.category != Category::Train || e.event != Event::ZeroGrad) continue;
    for (const auto& [kind, why] : gone) {
      const int64_t held = e.ledger[static_cast<std::size_t>(kind)];
      if (held == 0) continue;
      return "rank " + std::to_string(r.rank) + " step " + std::to_string(e.step + 1) + ": " +
             memory::to_string(kind) + " holds " + std::to_string(held) + " bytes after zero_grad (" + why +
             ": 0 expected)";
    }
  }
  return "";
}

std::string allocator_drift(const RankRecord& r) {
  int64_t first = 0;
  bool have = false;
  for (const auto& e : r.timeline) {
    if (e.category != Category::Train || e.event != Event::StepEnd || e.step < 1) continue;
    if (!have) {
      first = e.allocated_bytes;
      have = true;
      continue;
    }
    if (std::llabs(e.allocated_bytes - first) > Tolerances::kStepDriftBytes)
      return "rank " + std::to_string(r.rank) + " step " + std::to_string(e.step + 1) + ": " +
             std::to_string(e.allocated_bytes) + " bytes at step end vs " + std::to_string(first) +
             " at the end of step 2 (drift " + std::to_string(e.allocated_bytes - first) + " bytes, tolerance " +
             std::to_string(Tolerances::kStepDriftBytes) + ")";
  }
  return "";
}

}  // namespace

Verdict check_flat_end_of_step_memory(const Scenario& sc, const RunRecord& run) {
  if (run.observed.ledger)
    for (const RankRecord& r : run.ranks)
      if (std::string m = left_at_zero_grad(r); !m.empty()) return {kName, false, false, m};
  if (sc.steps < 2) return {kName, true, true, "needs 2 steps or more"};
  const bool allocator = sc.steps >= 3 && run.observed.allocator;
  if (!allocator && !run.observed.ledger)
    return {kName, true, true, "needs 3 steps or more, or a ledger (the " + run.backend + " backend)"};
  for (const RankRecord& r : run.ranks) {
    if (run.observed.ledger)
      if (std::string m = ledger_growth(r); !m.empty()) return {kName, false, false, m};
    if (allocator)
      if (std::string m = allocator_drift(r); !m.empty()) return {kName, false, false, m};
  }
  return {kName, true, false, allocator ? "flat" : "every ledger kind flat (the allocator needs 3 steps)"};
}

}  // namespace shardfuzz::harness
