// Property: between two events of one hook (no model compute runs between them: the pre-backward
// hook's unshard, wait and prefetches; a reshard and the post_forward or post_backward that
// records it; the optimizer step and zero_grad; one step's end and the next one's begin), every
// allocator byte that came or went is a ledger byte or an unsharded gradient: the bytes outside
// them do not move. And the peak between them passes the allocator's bytes before it only by what
// the hook allocates for the buffers it books, plus the temporaries FSDP2 makes there
// (docs/fsdp2-semantics.md section 10: a Shard(d>0) parameter's copy-out and reduce go through a
// full-size temporary). So a buffer the ledger books late or frees early, and a transient copy
// that only the peak sees, are reported with the event. On a device the caching allocator rounds
// every block to 512 bytes: the comparison allows that rounding per buffer the hook touched.
#include "harness/properties/property.h"

#include <algorithm>
#include <set>

namespace shardfuzz::harness {
namespace {

using memory::Event;
using memory::TimelineEvent;

constexpr const char* kName = "every_byte_explained";
constexpr int64_t kDeviceBlockBytes = 512;

// Bytes outside the ledger and autograd's unsharded gradients: activations, inputs, model buffers.
int64_t outside(const TimelineEvent& e) { return e.allocated_bytes - e.ledger_total() - e.unsharded_grad_bytes; }

bool is(const TimelineEvent& e, Event event, const std::string& group) { return e.event == event && e.group == group; }

// Whether `e` is recorded by the same hook as `prev`, with no model compute between them.
// `chained`: prev itself opened a hook or continued one.
bool same_hook(const TimelineEvent& prev, const TimelineEvent& e, bool chained) {
  if (prev.category == memory::Category::Ac || e.category == memory::Category::Ac) return false;
  switch (e.event) {
    case Event::AllGatherIssued:
      return chained && (is(prev, Event::PreForward, e.group) || is(prev, Event::PreBackwardBegin, e.group) ||
                         (prev.event == Event::Prefetch && prev.prefetch_target() == e.group));
    case Event::Prefetch:
      // The implicit backward prefetch, inside its issuer's pre-backward hook after the wait. (An
      // explicit list's prefetch is issued by its state, named "(forward state)": it may be a state
      // with no parameters, whose hook follows compute, so it is not judged.)
      return chained && (is(prev, Event::PreBackwardBegin, e.group) || is(prev, Event::AllGatherIssued, e.group));
    case Event::PreBackwardEnd:
      return chained && (is(prev, Event::PreBackwardBegin, e.group) || prev.event == Event::AllGatherIssued ||
                         is(prev, Event::Prefetch, e.group));
    case Event::PostForward: return is(prev, Event::Reshard, e.group);
    case Event::ZeroGrad: return prev.event == Event::OptimizerStep;
    case Event::StepBegin: return prev.event == Event::StepEnd;
    default: return false;
  }
}

bool opens_hook(const TimelineEvent& e) {
  return e.event == Event::PreForward || e.event == Event::PreBackwardBegin || e.event == Event::Reshard ||
         e.event == Event::OptimizerStep || e.event == Event::StepEnd;
}

struct Hook {
  int64_t allocated = 0;  // bytes the hook's booked buffers grew by (frees not netted)
  int touched = 0;        // (group, kind) slots that changed
};

Hook booked_growth(const TimelineEvent& prev, const TimelineEvent& e) {
  Hook h;
  std::set<std::string> groups;
  for (const auto& [g, t] : prev.ledger_by_group) groups.insert(g);
  for (const auto& [g, t] : e.ledger_by_group) groups.insert(g);
  static const memory::KindTotals kNone{};
  for (const std::string& g : groups) {
    const auto a = prev.ledger_by_group.find(g), b = e.ledger_by_group.find(g);
    const memory::KindTotals& before = a == prev.ledger_by_group.end() ? kNone : a->second;
    const memory::KindTotals& after = b == e.ledger_by_group.end() ? kNone : b->second;
    for (std::size_t k = 0; k < before.size(); ++k) {
      if (before[k] == after[k]) continue;
      ++h.touched;
      h.allocated += std::max<int64_t>(0, after[k] - before[k]);
    }
  }
  h.allocated += std::max<int64_t>(0, e.unsharded_grad_bytes - prev.unsharded_grad_bytes);
  return h;
}

// A full-size temporary FSDP2 makes in the hook: the copy-out of a Shard(d>0) parameter of a group
// the hook gathered (all-gather issued, or waited on: its unsharded bytes grew).
int64_t temporaries(const RankRecord& r, const TimelineEvent& prev, const TimelineEvent& e) {
  int64_t bytes = 0;
  for (const ShardRecord& s : r.shards) {
    if (s.shard_dim == 0) continue;
    const auto unsharded = [&](const TimelineEvent& at) {
      const auto it = at.ledger_by_group.find(s.group);
      return it == at.ledger_by_group.end() ? 0 : it->second[static_cast<std::size_t>(memory::BufferKind::UnshardedParam)];
    };
    if (unsharded(e) > unsharded(prev) || (e.event == Event::AllGatherIssued && e.group == s.group))
      bytes += s.unsharded_bytes;
  }
  return bytes;
}

std::string where(const RankRecord& r, const TimelineEvent& prev, const TimelineEvent& e, std::size_t i) {
  std::string at = "rank " + std::to_string(r.rank) + " step " + std::to_string(e.step + 1) + ", event #" +
                   std::to_string(i) + " " + memory::name_of(e.event);
  if (!e.group.empty()) at += " of " + e.group;
  return at + " (since #" + std::to_string(i - 1) + " " + memory::name_of(prev.event) +
         (prev.group.empty() ? "" : " of " + prev.group) + ", the same hook)";
}

std::string judge_pair(const RankRecord& r, const TimelineEvent& prev, const TimelineEvent& e, std::size_t i,
                       bool on_device) {
  const Hook h = booked_growth(prev, e);
  const int64_t rounding = on_device ? kDeviceBlockBytes * (h.touched + 1) : 0;
  const int64_t moved = outside(e) - outside(prev);
  if (std::llabs(moved) > rounding)
    return where(r, prev, e, i) + ": " + std::to_string(std::llabs(moved)) + " allocator bytes " +
           (moved > 0 ? "appeared" : "went") + " that no ledger entry or unsharded gradient explains (allocator " +
           std::to_string(prev.allocated_bytes) + " -> " + std::to_string(e.allocated_bytes) + ", ledger " +
           std::to_string(prev.ledger_total()) + " -> " + std::to_string(e.ledger_total()) +
           ", unsharded grads " + std::to_string(prev.unsharded_grad_bytes) + " -> " +
           std::to_string(e.unsharded_grad_bytes) + "; allowed " + std::to_string(rounding) + ")";
  if (e.peak_bytes <= prev.peak_bytes) return "";
  const int64_t temporary = temporaries(r, prev, e);
  const int64_t bound = prev.allocated_bytes + h.allocated + temporary + rounding;
  if (e.peak_bytes <= bound) return "";
  return where(r, prev, e, i) + ": the peak reached " + std::to_string(e.peak_bytes) + " bytes, " +
         std::to_string(e.peak_bytes - bound) + " over what the hook allocates (" +
         std::to_string(prev.allocated_bytes) + " before it + " + std::to_string(h.allocated) +
         " for the buffers it booked + " + std::to_string(temporary) +
         " of Shard(d>0) copy-out temporaries + rounding " + std::to_string(rounding) + ")";
}

std::string judge_rank(const RankRecord& r, bool on_device) {
  bool chained = false;
  for (std::size_t i = 1; i < r.timeline.size(); ++i) {
    const TimelineEvent &prev = r.timeline[i - 1], &e = r.timeline[i];
    if (e.event == Event::Teardown) break;
    // A failed attempt ran between a step's end and its retry's begin (recovery kept its events apart).
    const bool retried = e.event == Event::StepBegin &&
                         std::any_of(r.recoveries.begin(), r.recoveries.end(),
                                     [&](const RecoveryRecord& rec) { return rec.step == e.step; });
    const bool in_hook = !retried && same_hook(prev, e, chained || opens_hook(prev));
    if (in_hook)
      if (std::string m = judge_pair(r, prev, e, i, on_device); !m.empty()) return m;
    chained = in_hook;
  }
  return "";
}

}  // namespace

Verdict check_every_byte_explained(const Scenario&, const RunRecord& run) {
  if (!run.observed.allocator || !run.observed.ledger)
    return {kName, true, true, "the " + run.backend + " backend observes no allocator and ledger side by side"};
  const bool on_device = run.device != "cpu" && run.device != "meta";
  for (const RankRecord& r : run.ranks)
    if (std::string m = judge_rank(r, on_device); !m.empty()) return {kName, false, false, m};
  return {kName, true, false, "within every hook, every allocator byte that moved is a ledger byte"};
}

}  // namespace shardfuzz::harness
