// Property: every activation-checkpoint region runs the policy the scenario asked for, judged from
// the regions' "ac" events (checkpoint_forward, checkpoint_recompute) against the scenario alone.
// A region that silently degrades (selective_ops recomputing everything, a recompute running
// twice or never) keeps the values right and often the memory too; users pay in step time or in
// memory they planned to save, as with a wrong prefetch.
// - No region where none was asked (mode none, or a block that runs under no_grad), and each
//   region runs the mode asked for.
// - selective_ops: the forward keeps every matmul-like output it ran (upstream's policy: MUST_SAVE
//   for mm), with their bytes; the recompute hands every kept output back and runs no matmul again.
// - non_reentrant and reentrant: the forward keeps nothing; a recompute runs exactly what its
//   forward ran (the same saves and matmul-like ops: a deterministic region).
// - non_reentrant and selective_ops: each forward that saved anything recomputes exactly once in
//   the backward that follows (the first unpack recomputes, the rest reuse) unless a later block
//   under no_grad cuts backward off from it; never twice. Reentrant recomputes at most once (it has
//   no backward when its input needs no grad).
#include "harness/properties/property.h"

#include <map>
#include <string>
#include <vector>

namespace shardfuzz::harness {
namespace {

using memory::Category;
using memory::Event;

Verdict fail(std::string message) { return {"checkpoint_policy_honoured", false, false, std::move(message)}; }

// The mode the scenario asks of the module at `path`, whether it runs with grad at all, and
// whether backward reaches it: blocks are chained, so a later block under no_grad cuts every
// gradient path to it (its saves are then never unpacked, and that is right).
struct Asked {
  ac::CheckpointMode mode = ac::CheckpointMode::None;
  bool with_grad = true;
  bool reached = true;
};

std::map<std::string, Asked> asked_regions(const Scenario& sc) {
  std::map<std::string, Asked> out;
  bool cut_after = false;
  for (std::size_t i = sc.blocks.size(); i-- > 0;) {
    out["layers." + std::to_string(i)] = {sc.blocks[i].ac, !sc.blocks[i].no_grad, !cut_after};
    cut_after = cut_after || sc.blocks[i].no_grad;
  }
  return out;
}

std::string where(const RankRecord& r, const memory::TimelineEvent& e) {
  return "rank " + std::to_string(r.rank) + " step " + std::to_string(e.step + 1) + ", " + memory::name_of(e.event) +
         " of " + e.group;
}

// One forward report against the asked mode. "" when it holds.
std::string check_forward(const RankRecord& r, const memory::TimelineEvent& e, ac::CheckpointMode mode) {
  const auto counts = e.checkpoint_counts();
  const int64_t ran = counts.matmul_like_ran, kept = counts.outputs_kept;
  if (mode == ac::CheckpointMode::SelectiveOps) {
    if (kept != ran)
      return where(r, e) + ": the selective_ops region kept " + std::to_string(kept) + " of the " + std::to_string(ran) +
             " matmul-like outputs its forward ran (the policy saves every matmul output; the recompute will run the rest "
             "again)";
    if (kept > 0 && counts.bytes_kept <= 0)
      return where(r, e) + ": the selective_ops region kept " + std::to_string(kept) + " matmul-like outputs of 0 bytes";
    return "";
  }
  if (kept != 0)
    return where(r, e) + ": the " + ac::to_string(mode) + " region kept " + std::to_string(kept) +
           " matmul-like outputs in forward (only selective_ops keeps any)";
  return "";
}

// A recompute against the forward it recomputes. "" when it holds.
std::string check_recompute(const RankRecord& r, const memory::TimelineEvent& e, const memory::TimelineEvent& forward,
                            ac::CheckpointMode mode) {
  const auto counts = e.checkpoint_counts(), forward_counts = forward.checkpoint_counts();
  const int64_t ran = counts.matmul_like_ran, reused = counts.outputs_reused;
  const int64_t forward_ran = forward_counts.matmul_like_ran, kept = forward_counts.outputs_kept;
  if (mode == ac::CheckpointMode::SelectiveOps && (reused != kept || ran != 0))
    return where(r, e) + ": the selective_ops recompute reused " + std::to_string(reused) + " of the " +
           std::to_string(kept) + " matmul-like outputs its forward kept and ran " + std::to_string(ran) +
           " matmul-like ops again (it must reuse every kept output and run none)";
  if (ran + reused != forward_ran)
    return where(r, e) + ": the recompute ran " + std::to_string(ran + reused) + " matmul-like ops, its forward " +
           std::to_string(forward_ran) + " (a recompute runs what its forward ran)";
  if (mode != ac::CheckpointMode::Reentrant && counts.saves != forward_counts.saves)
    return where(r, e) + ": the recompute refilled " + std::to_string(counts.saves) + " saved tensors, its forward saved " +
           std::to_string(forward_counts.saves);
  return "";
}

// One rank's one step. "" when every region ran its policy.
std::string check_step(const std::map<std::string, Asked>& asked, const RankRecord& r, int step) {
  std::map<std::string, std::vector<memory::TimelineEvent>> unmatched;  // forwards awaiting their recompute, by region
  for (const auto& e : r.timeline) {
    if (e.step != step) continue;
    if (e.category == Category::Train && e.event == Event::BackwardEnd) {
      for (const auto& [region, forwards] : unmatched)
        for (const auto& f : forwards)
          if (const int64_t saves = f.checkpoint_counts().saves;
              saves > 0 && asked.at(region).reached && asked.at(region).mode != ac::CheckpointMode::Reentrant)
            return where(r, f) + ": the region saved " + std::to_string(saves) +
                   " tensors in forward but never recomputed them in the backward that followed";
      unmatched.clear();
      continue;
    }
    if (e.category != Category::Ac) continue;
    const auto it = asked.find(e.group);
    if (it == asked.end() || it->second.mode == ac::CheckpointMode::None || !it->second.with_grad)
      return where(r, e) + ": a checkpoint region ran where the scenario asks for none" +
             (it != asked.end() && !it->second.with_grad ? " (the block runs under no_grad)" : "");
    const ac::CheckpointMode mode = it->second.mode;
    if (e.checkpoint_mode() != ac::to_string(mode))
      return where(r, e) + ": the scenario asks for " + ac::to_string(mode) + " but the region ran as " +
             e.checkpoint_mode().value_or("?");
    auto& forwards = unmatched[e.group];
    if (e.event == Event::CheckpointForward) {
      if (std::string m = check_forward(r, e, mode); !m.empty()) return m;
      forwards.push_back(e);
      continue;
    }
    if (forwards.empty())
      return where(r, e) + ": a recompute with no forward left to recompute (a second recompute of one forward?)";
    const memory::TimelineEvent forward = forwards.back();  // the last use runs backward first
    forwards.pop_back();
    if (std::string m = check_recompute(r, e, forward, mode); !m.empty()) return m;
  }
  return "";
}

}  // namespace

Verdict check_checkpoint_policy_honoured(const Scenario& sc, const RunRecord& run) {
  if (!run.observed.checkpoints)
    return {"checkpoint_policy_honoured", true, true, "the " + run.backend + " backend does not report checkpoint regions"};
  const auto asked = asked_regions(sc);
  for (const RankRecord& r : run.ranks)
    for (int step = 0; step < sc.steps; ++step)
      if (std::string m = check_step(asked, r, step); !m.empty()) return fail(m);
  return {"checkpoint_policy_honoured", true, false, "every checkpoint region ran the policy asked for"};
}

}  // namespace shardfuzz::harness
