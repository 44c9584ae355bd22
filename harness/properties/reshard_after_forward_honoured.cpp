// Property: reshard_after_forward means what it says. At the end of every forward (the training
// forwards and the no_grad evaluation forward), every group asked to reshard after forward (True,
// an int N > 1, or "auto" on a non-root) holds no unsharded parameters; a root asked explicitly
// for True included (bug zoo rows 2 and 3: the flag ignored on roots, and under no_grad).
// And an int N keeps what upstream keeps: with 1 < N < the shard group's size, each rank keeps
// the 1/N slice of every all-gather output (its post-forward mesh re-gathers over N ranks); with
// N equal to the size it reshards fully, as True. So the ledger's sharded_post_forward bytes at
// the end of a forward are exactly the sum, over the groups with such an N, of their padded
// all-gather bytes / N; none for any other value.
// And the converse: a group asked to keep its parameters (False, the int 1, which upstream takes
// as False, or "auto" on the root) still holds them unsharded at the end of every forward; a group
// that resharded anyway gathers them again in backward, the trade its user opted out of.
#include "harness/properties/property.h"
#include "runtime/semantics/profile.h"

#include <algorithm>
#include <map>

namespace shardfuzz::harness {
namespace {

using memory::Event;

bool asked_to_reshard(const std::string& path, const ShardSpec& spec) {
  using Kind = fsdp::ReshardAfterForward::Kind;
  switch (spec.reshard_after_forward.kind) {
    case Kind::True: return true;
    case Kind::False: return false;
    case Kind::Int: return spec.reshard_after_forward.n != 1;
    case Kind::Auto: return !path.empty();  // upstream: the root's None means False
  }
  return false;
}

// The sharded_post_forward bytes a rank holds after a forward, and the groups they come from.
struct PostForwardSlices {
  int64_t bytes = 0;
  std::string groups;  // "layers.0 (N=2 of 4: 1536 B), ..."
};

PostForwardSlices expected_post_forward_slices(const Scenario& sc, const RankRecord& r) {
  const std::map<std::string, int64_t> by_group = all_gather_bytes_by_group(r);
  std::map<std::string, int> shard_size;
  for (const ShardRecord& s : r.shards) shard_size[s.group] = s.shard_size;
  PostForwardSlices out;
  for (const auto& [path, spec] : sc.fully_shard) {
    const auto& raf = spec.reshard_after_forward;
    if (raf.kind != fsdp::ReshardAfterForward::Kind::Int) continue;
    if (path.empty() && sc.profile.root_never_reshards_after_forward) continue;  // the root keeps everything
    const auto it = by_group.find(path.empty() ? "root" : path);
    if (it == by_group.end()) continue;
    const int64_t bytes = it->second;
    const int size = shard_size.at(it->first);
    if (raf.n <= 1 || raf.n >= size) continue;
    out.bytes += bytes / raf.n;
    out.groups += (out.groups.empty() ? "" : ", ") + it->first + " (N=" + std::to_string(raf.n) + " of " +
                  std::to_string(size) + ": " + std::to_string(bytes / raf.n) + " B)";
  }
  return out;
}

std::string post_forward_slices_kept(const PostForwardSlices& expected, const RankRecord& r,
                                     const memory::TimelineEvent& e, int step) {
  const int64_t held = e.ledger[static_cast<std::size_t>(memory::BufferKind::ShardedPostForward)];
  if (held == expected.bytes) return "";
  return "rank " + std::to_string(r.rank) + " step " + std::to_string(step + 1) + ": after " +
         (e.event == Event::EvalForwardEnd ? "the no_grad evaluation forward" : "the forward") + ", " +
         memory::to_string(memory::BufferKind::ShardedPostForward) + " holds " + std::to_string(held) +
         " bytes, expected " + std::to_string(expected.bytes) + " (" +
         (expected.groups.empty() ? std::string("no group has an int reshard_after_forward between 1 and its shard group's size")
                                  : "the 1/N slices of " + expected.groups) +
         ")";
}

bool holds_parameters(const RankRecord& r, const std::string& group) {
  return std::any_of(r.shards.begin(), r.shards.end(), [&](const ShardRecord& s) { return s.group == group; });
}

}  // namespace

Verdict check_reshard_after_forward_honoured(const Scenario& sc, const RunRecord& run) {
  // The first violation after a training forward and after the no_grad evaluation forward; the
  // latter is reported when both exist (the more specific case: a forward no backward follows).
  std::string training, evaluation;
  for (const RankRecord& r : run.ranks) {
    const PostForwardSlices slices = expected_post_forward_slices(sc, r);  // the same after every forward
    for (int step = 0; step < sc.steps; ++step) {
      for (const auto& e : r.events_of_step(step, memory::Category::Train)) {
        if (e.event != Event::ForwardEnd && e.event != Event::EvalForwardEnd) continue;
        std::string& slot = e.event == Event::EvalForwardEnd ? evaluation : training;
        if (!slot.empty()) continue;
        if (run.observed.ledger) slot = post_forward_slices_kept(slices, r, e, step);
        if (!slot.empty()) continue;
        for (const auto& [path, spec] : sc.fully_shard) {
          const std::string group = path.empty() ? "root" : path;
          // Every value asks for one or the other: False, the int 1 and the root's "auto" to keep.
          const bool keep = !asked_to_reshard(path, spec);
          if (keep && !holds_parameters(r, group)) continue;
          const bool unsharded = std::find(e.unsharded.begin(), e.unsharded.end(), group) != e.unsharded.end();
          if (unsharded == keep) continue;
          const std::string which = e.event == Event::EvalForwardEnd ? "the no_grad evaluation forward" : "the forward";
          slot = "rank " + std::to_string(r.rank) + " step " + std::to_string(step + 1) + ": after " + which +
                 ", group " + group + " (reshard_after_forward=" + spec.reshard_after_forward.describe() +
                 (path.empty() ? ", the root" : "") + ") " +
                 (keep ? "no longer holds its unsharded parameters: it resharded" : "still holds unsharded parameters");
          break;
        }
      }
    }
  }
  if (!evaluation.empty() || !training.empty())
    return {"reshard_after_forward_honoured", false, false, evaluation.empty() ? training : evaluation};
  return {"reshard_after_forward_honoured", true, false,
          "every group asked to reshard after forward did, and every group asked to keep its parameters kept them"};
}

}  // namespace shardfuzz::harness
