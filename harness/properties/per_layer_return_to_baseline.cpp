// Property 1: per-layer return to baseline during backward.
// Ledger, exact: after each group's post_backward, no group that already finished backward holds a
// pending all-gather or unsharded params, no all-gather pending there is one nobody will consume
// (its group runs no backward before finalize_backward drops it: a leak from the first
// post_backward it outlives), and none lives unconsumed until finalize_backward. Allocator: from
// one block's post_backward to the next, the growth is at most what the ledger's legitimate
// entries explain (sharded grads, the next prefetch, reduce-scatter keep-alives) plus the unsharded
// grads of groups still in backward, plus a stated tolerance.
// HSDP, exact: at each post_backward only that group may hold its reduce output (all_reduce_input).
// Every ledger kind, exact: within one backward pass the sharded parameters, the optimizer states
// and the persistent all-gather buffer do not change, and at a group's post_backward the only
// reduce-scatter input alive is that group's own (upstream's cap K = 1: the next reduce drops the
// previous one), at most its trainable parameters' unsharded numel in the reduce dtype, and the
// deferred all-gather is at most one (the largest group's all-gather output). A leak of
// a buffer the ledger does account for (its entry living as long as the buffer) is explained by
// the ledger, so the allocator comparison cannot see it; these can, and name the kind.
// The allocator comparison needs both the allocator and the ledger (not the torch backend's).
#include "harness/properties/property.h"
#include "runtime/memory/ledger.h"

#include <c10/core/ScalarType.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

namespace shardfuzz::harness {
namespace {

using memory::Category;
using memory::Event;

bool is_block(const std::string& group) {
  if (group.rfind("layers.", 0) != 0) return false;
  return group.find('.', 7) == std::string::npos;
}

std::string where(const RankRecord& r, const memory::TimelineEvent& e) {
  return "rank " + std::to_string(r.rank) + " step " + std::to_string(e.step + 1) + ", " + memory::name_of(e.event) +
         " of " + e.group;
}

Verdict fail(std::string message) { return {"per_layer_return_to_baseline", false, false, std::move(message)}; }

// Groups that run pre_backward again later in the same backward pass (a module used by several
// forwards of one backward: its second use's recompute or prefetch legitimately re-gathers it).
std::vector<std::string> backward_again(const std::vector<memory::TimelineEvent>& events, std::size_t k) {
  std::vector<std::string> out;
  for (std::size_t j = k + 1; j < events.size(); ++j) {
    if (events[j].category == Category::Train && events[j].event == Event::BackwardEnd) break;
    if (events[j].event == Event::PreBackwardBegin) out.push_back(events[j].group);
  }
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Whether the all-gather `g` holds pending at event k is never consumed: the next event without
// it pending is a finalize_backward of g that dropped it.
bool never_consumed(const std::vector<memory::TimelineEvent>& events, std::size_t k, const std::string& g) {
  for (std::size_t j = k + 1; j < events.size(); ++j) {
    if (contains(events[j].pending_all_gather, g)) continue;
    return events[j].event == Event::FinalizeBackward && events[j].group == g &&
           events[j].dropped_pending_all_gather();
  }
  return false;
}

// A pending all-gather nobody will consume in this pass (its group will not run backward): a leak
// from the first post_backward it outlives, not only at finalize_backward. "" when there is none.
std::string unconsumed_at_post_backward(const RankRecord& r, const std::vector<memory::TimelineEvent>& events, std::size_t k) {
  const auto& e = events[k];
  for (const auto& g : e.pending_all_gather) {
    if (!never_consumed(events, k, g)) continue;
    const auto bytes = e.pending_all_gather_bytes.count(g) ? e.pending_all_gather_bytes.at(g) : 0;
    return where(r, e) + ": the all-gather of " + g + " (" + std::to_string(bytes) + " bytes) is pending and will never be " +
           "consumed: " + g + " runs no backward before finalize_backward drops it";
  }
  return "";
}

// The exact ledger checks at one post_backward: no finished group (that will not run backward again
// in this pass) holds a pending all-gather or unsharded params, and only this group holds its HSDP
// reduce output (reduce_dtype != the parameters' dtype: an older group's still alive grows memory by
// one buffer per layer). "" when it holds.
std::string ledger_at_post_backward(const RankRecord& r, const std::vector<memory::TimelineEvent>& events, std::size_t k) {
  const auto& e = events[k];
  const auto again = backward_again(events, k);
  std::vector<std::string> stale;
  for (const auto& g : e.stale_all_gathers())
    if (!contains(again, g)) stale.push_back(g);
  if (!stale.empty()) {
    std::ostringstream os;
    int64_t bytes = 0;
    for (const auto& g : stale) bytes += e.pending_all_gather_bytes.at(g);
    os << where(r, e) << ": " << stale.size() << " group(s) that already finished backward hold a pending "
       << "all-gather (" << bytes << " bytes):";
    for (const auto& g : stale) os << " " << g << " (" << e.pending_all_gather_bytes.at(g) << " B)";
    return os.str();
  }
  for (const auto& g : e.unsharded)
    if (contains(e.finished_backward, g) && !contains(again, g))
      return where(r, e) + ": group " + g + " finished backward but its parameters are still unsharded";
  if (std::string m = unconsumed_at_post_backward(r, events, k); !m.empty()) return m;
  std::vector<std::string> kept;
  int64_t kept_bytes = 0;
  for (const auto& [g, b] : e.all_reduce_input_bytes)
    if (g != e.group) kept.push_back(g + " (" + std::to_string(b) + " B)"), kept_bytes += b;
  if (kept.empty()) return "";
  std::ostringstream os;
  os << where(r, e) << ": " << kept.size() << " group(s) that already reduced still hold their HSDP reduce "
     << "output (all_reduce_input, " << kept_bytes << " bytes):";
  for (const auto& g : kept) os << " " << g;
  return os.str();
}

// The reduce-scatter input a group can hold: its trainable parameters' unsharded padded numel in
// the dtype gradients are reduced in (a bound: a parameter that got no gradient adds nothing).
int64_t reduce_scatter_bound(const Scenario& sc, const RankRecord& r, const std::string& group) {
  const auto& mp = sc.mixed_precision;
  const int64_t unsharded = c10::elementSize(mp ? scalar_type_of(mp->param_dtype) : sc.stored_dtype(true));
  const int64_t reduced = mp ? c10::elementSize(scalar_type_of(mp->reduce_dtype.value_or(mp->param_dtype))) : unsharded;
  int64_t bytes = 0;
  for (const ShardRecord& s : r.shards)
    if (s.group == group && s.requires_grad) bytes += s.unsharded_bytes / unsharded * reduced;
  return bytes;
}

// The largest flat all-gather output of any group on this rank (padded, in the param dtype).
int64_t largest_all_gather(const RankRecord& r) {
  int64_t largest = 0;
  for (const auto& [g, b] : all_gather_bytes_by_group(r)) largest = std::max(largest, b);
  return largest;
}

// Each ledger kind at a post_backward against what its schedule position allows; `first`: the
// pass's first post_backward. "" when every kind holds.
std::string kinds_at_post_backward(const Scenario& sc, const RankRecord& r, const memory::TimelineEvent& e,
                                   const memory::TimelineEvent& first) {
  using memory::BufferKind;
  for (const BufferKind kind : {BufferKind::ShardedParam, BufferKind::OptimizerState, BufferKind::PersistentAllGather}) {
    const auto i = static_cast<std::size_t>(kind);
    if (e.ledger[i] != first.ledger[i])
      return where(r, e) + ": " + memory::to_string(kind) + " bytes changed within one backward pass, from " +
             std::to_string(first.ledger[i]) + " at " + first.group + "'s post_backward to " + std::to_string(e.ledger[i]) +
             " (nothing in backward allocates or frees them)";
  }
  // The implicit forward's deferred free keeps one consumed all-gather output in a single slot of
  // the shared context until the next wait (upstream's _all_gather_state): never more than one.
  const int64_t deferred = e.ledger[static_cast<std::size_t>(BufferKind::DeferredAllGather)];
  if (const int64_t largest = largest_all_gather(r); deferred > largest)
    return where(r, e) + ": " + memory::to_string(BufferKind::DeferredAllGather) + " holds " + std::to_string(deferred) +
           " bytes, over the " + std::to_string(largest) +
           " of the largest group's all-gather (one deferred all-gather lives at a time: the next wait drops it)";
  const int64_t held = e.ledger[static_cast<std::size_t>(BufferKind::ReduceScatterInput)];
  const int64_t bound = reduce_scatter_bound(sc, r, e.group);
  if (held > bound)
    return where(r, e) + ": " + memory::to_string(BufferKind::ReduceScatterInput) + " holds " + std::to_string(held) +
           " bytes, over the " + std::to_string(bound) + " of " + e.group +
           "'s own reduce-scatter (upstream keeps one: the next reduce drops the previous input)";
  return "";
}

// The allocator's growth from the previous block's post_backward to this one, against what the
// ledger explains. "" when within the tolerance.
std::string growth_since(const RankRecord& r, const memory::TimelineEvent& prev, const memory::TimelineEvent& e) {
  const int64_t growth = e.allocated_bytes - prev.allocated_bytes;
  const int64_t explained = (e.ledger_total() - e.stale_all_gather_bytes() + e.unsharded_grad_bytes) -
                            (prev.ledger_total() - prev.stale_all_gather_bytes() + prev.unsharded_grad_bytes);
  const int64_t tolerance =
      Tolerances::kLayerGrowthBytes + static_cast<int64_t>(Tolerances::kLayerGrowthFraction * std::llabs(explained));
  if (growth <= explained + tolerance) return "";
  return where(r, e) + ": allocator grew " + std::to_string(growth) + " bytes since " + prev.group +
         "'s post_backward, the ledger explains " + std::to_string(explained) + " (tolerance " +
         std::to_string(tolerance) + "): " + std::to_string(growth - explained) + " bytes unaccounted";
}

// An all-gather finalize_backward dropped unconsumed: where it was issued and how long it lived.
std::string dropped_at_finalize(const RankRecord& r, const std::vector<memory::TimelineEvent>& events, std::size_t k) {
  const auto& e = events[k];
  std::string issued = "earlier";
  int64_t bytes = 0;
  int blocks_after = 0;
  for (std::size_t j = k; j-- > 0;) {
    const auto& before = events[j];
    if (bytes == 0 && before.pending_all_gather_bytes.count(e.group)) bytes = before.pending_all_gather_bytes.at(e.group);
    if (before.event == Event::PostBackward && is_block(before.group)) ++blocks_after;
    if (before.event == Event::Prefetch && before.prefetch_target() == e.group) {
      issued = "by " + before.group + "'s " + before.prefetch_pass().value_or("") + " prefetch";
      break;
    }
  }
  return where(r, e) + ": the all-gather of " + e.group + " (" + std::to_string(bytes) + " bytes), issued " + issued +
         ", was never consumed and lived until the end of backward (" + std::to_string(blocks_after) +
         " block backward(s) later)";
}

// One rank's one step; "" when every layer returned to baseline.
std::string check_step(const Scenario& sc, const RunRecord& run, const RankRecord& r, int step) {
  std::vector<memory::TimelineEvent> events;  // both categories: the train events delimit backward passes
  for (const auto& e : r.timeline)
    if (e.step == step) events.push_back(e);
  // With several forwards per backward a block runs backward once per use and the engine
  // interleaves the uses: the allocator comparison between consecutive blocks no longer isolates
  // one layer, so only the exact ledger checks apply.
  const bool compare_allocator = sc.forwards_per_backward == 1 && run.observed.allocator && run.observed.ledger;
  const memory::TimelineEvent* prev_block = nullptr;
  const memory::TimelineEvent* first_in_pass = nullptr;
  for (std::size_t k = 0; k < events.size(); ++k) {
    const auto& e = events[k];
    if (e.category == Category::Ac) continue;  // a checkpoint region's report, within the phase
    if (e.category != Category::Fsdp) {
      prev_block = first_in_pass = nullptr;  // a new phase (micro-batch forward or backward): compare within one backward only
      continue;
    }
    if (e.event == Event::PostBackward) {
      if (std::string m = ledger_at_post_backward(r, events, k); !m.empty()) return m;
      if (run.observed.ledger) {
        if (!first_in_pass) first_in_pass = &e;
        if (std::string m = kinds_at_post_backward(sc, r, e, *first_in_pass); !m.empty()) return m;
      }
      if (is_block(e.group) && compare_allocator) {
        if (prev_block)
          if (std::string m = growth_since(r, *prev_block, e); !m.empty()) return m;
        prev_block = &e;
      }
    }
    if (e.event == Event::FinalizeBackward && e.dropped_pending_all_gather())
      return dropped_at_finalize(r, events, k);
  }
  return "";
}

}  // namespace

Verdict check_per_layer_return_to_baseline(const Scenario& sc, const RunRecord& run) {
  for (const RankRecord& r : run.ranks)
    for (int step = 0; step < sc.steps; ++step)
      if (std::string m = check_step(sc, run, r, step); !m.empty()) return fail(m);
  return {"per_layer_return_to_baseline", true, false, "every layer returned to baseline"};
}

}  // namespace shardfuzz::harness
