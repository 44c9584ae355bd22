// Property: the prefetch schedule is the one the policy prescribes. A scheduler that prefetches the
// wrong group, or none, loses no memory when the strict guard catches the stray prefetch, so no
// memory property sees it; users pay in step time (lost overlap). This check rebuilds, from the
// scenario's explicit prefetch lists, the profile's switches and the forward events alone (which
// groups ran forward, in what order), what each hook must prefetch, and compares every rank's
// events with it:
// - implicit backward prefetch (a state with no backward list, or []): at a group's first
//   pre_backward of a pass it pops its last recorded forward index and prefetches the group whose
//   forward ended just before (upstream's post_forward_order[cur - 1]); nothing when no index is
//   left or it was the first;
// - an explicit list (non-empty) replaces it: after every pre_backward hook of that state, exactly
//   the listed groups, in order; a forward list after every pre_forward, in order;
// - a prefetch of a sharded group issues its all-gather at once, in the pass's state;
// - a skip (strict's guard) only of a group that already finished backward or does not run
//   backward later in this pass, and only where the profile has the guard;
// - no group is all-gathered twice for one use: not while it holds unsharded parameters or a
//   pending all-gather, and not again after an all-gather that no reshard, finalize_backward or
//   drop the profile allows (strict's, of groups no backward will use) freed: a gather thrown away
//   and issued again costs a collective and, on a device, the overlap.
// Each finding names the rank, step, event (its index in the rank's timeline), the issuing group
// and the target. Under torch-2.9 the seed leak's mistargeted prefetch is the policy (the
// recompute records a second forward index), so this property passes there and
// per_layer_return_to_baseline judges the memory.
#include "harness/properties/property.h"
#include "runtime/semantics/profile.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace shardfuzz::harness {
namespace {

using memory::Category;
using memory::Event;

using Events = std::vector<memory::TimelineEvent>;
constexpr const char* kName = "prefetch_schedule_honoured";
constexpr const char* kExplicitIssuer = "(forward state)";  // how explicit prefetches are labelled

std::string group_name(const std::string& path) { return path.empty() ? "root" : path; }

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string listed(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + x;
  return "[" + out + "]";
}

// What the scenario and the profile prescribe, independent of the runtime's bookkeeping.
struct Policy {
  bool records_forward_in_backward = false;  // post_forward records during AC recompute (torch <= 2.9)
  bool skips_pointless_prefetch = false;     // strict's guard
  bool drops_unconsumed_at_post_backward = false;  // strict's drop of all-gathers no backward will use
  std::map<std::string, std::vector<std::string>> forward_list, backward_list;  // by issuing group
  bool lists_checkable = true;  // every state with a list has a group of its own (anchors its hooks)

  static Policy of(const Scenario& sc, const std::set<std::string>& groups) {
    const semantics::Profile& profile = sc.profile;
    Policy p;
    p.records_forward_in_backward = profile.post_forward_reshards_during_backward;
    p.skips_pointless_prefetch = profile.prefetch_skips_groups_without_pending_backward;
    p.drops_unconsumed_at_post_backward = profile.free_unconsumed_all_gather_at_post_backward;
    for (const auto& [path, spec] : sc.fully_shard) {
      const std::string issuer = group_name(path);
      const auto targets = [&](const std::vector<std::string>& paths) {
        std::vector<std::string> out;  // a listed state without a group of its own prefetches nothing
        for (const auto& t : paths)
          if (groups.count(group_name(t == "self" ? path : t))) out.push_back(group_name(t == "self" ? path : t));
        return out;
      };
      const bool has_lists = (spec.forward_prefetch && !spec.forward_prefetch->empty()) ||
                             (spec.backward_prefetch && !spec.backward_prefetch->empty());
      if (has_lists && !groups.count(issuer)) p.lists_checkable = false;
      if (spec.forward_prefetch) p.forward_list[issuer] = targets(*spec.forward_prefetch);
      // Only a non-empty list replaces the implicit prefetch ([] behaves as no call).
      if (spec.backward_prefetch && !spec.backward_prefetch->empty())
        p.backward_list[issuer] = targets(*spec.backward_prefetch);
    }
    return p;
  }
  const std::vector<std::string>* backward_of(const std::string& g) const {
    auto it = backward_list.find(g);
    return it == backward_list.end() ? nullptr : &it->second;
  }
};

// Upstream's scheduling bookkeeping, replayed from the events: the post-forward order, each
// group's recorded indices and whether its pre_backward already ran in this pass; and, for the
// duplicate all-gather, each group's last all-gather (event index) that no reshard, drop or
// finalize has freed since, and the groups that had a post_backward in this pass.
struct Replay {
  std::vector<std::string> post_forward_order;
  std::map<std::string, std::vector<int>> indices;
  std::set<std::string> in_pre_backward;
  std::map<std::string, std::size_t> gathered;
  std::set<std::string> backward_done;

  void reset() { *this = Replay{}; }
};

class RankCheck {
 public:
  RankCheck(const Policy& policy, const RankRecord& rank) : p_(policy), r_(rank), ev_(rank.timeline) {}

  std::string first_finding() {
    for (k_ = 0; k_ < ev_.size(); ++k_) {
      const memory::TimelineEvent& e = ev_[k_];
      std::string finding = step(e);
      if (!finding.empty()) return where(e) + ": " + finding;
    }
    return "";
  }

 private:
  std::string step(const memory::TimelineEvent& e) {
    if (e.category == Category::Train) {
      if (e.event == Event::BackwardEnd) {  // the final callback: every state IDLE
        model_.in_pre_backward.clear();
        model_.backward_done.clear();
      }
      if (e.event == Event::StepBegin && recovered_at(e.step)) model_.reset();  // reset_after_fault cleared it all
      return "";
    }
    if (e.category != Category::Fsdp) return "";
    if (e.event == Event::AllGatherIssued) return duplicate_all_gather(e);
    if (e.event == Event::Prefetch) return prefetch_outcome(e);
    if (e.event == Event::PostForward) return recorded_forward(e);
    if (e.event == Event::PreForward) return forward_list_honoured(e);
    if (e.event == Event::PreBackwardBegin) return pre_backward(e);
    if (e.event == Event::PostBackward) post_backward(e);
    if (e.event == Event::Reshard && !e.kept()) model_.gathered.erase(e.group);
    if (e.event == Event::ResetAfterFault) model_.gathered.erase(e.group);
    if (e.event == Event::FinalizeBackward) {
      model_.indices[e.group].clear();
      model_.post_forward_order.clear();  // cleared after every group's finalize; no forward runs between
      model_.in_pre_backward.erase(e.group);
      model_.gathered.erase(e.group);
      model_.backward_done.erase(e.group);
    }
    return "";
  }

  // Strict frees, at every post_backward, the all-gathers of groups no backward will use: those that
  // finished backward and those whose forward registered no backward. The replay frees at least
  // as much (any group with a post_backward in this pass, any whose next hook in this pass is not
  // a pre_backward), so a duplicate it reports is one the policy cannot explain.
  void post_backward(const memory::TimelineEvent& e) {
    model_.in_pre_backward.erase(e.group);
    model_.backward_done.insert(e.group);
    if (!p_.drops_unconsumed_at_post_backward) return;
    for (auto it = model_.gathered.begin(); it != model_.gathered.end();)
      it = model_.backward_done.count(it->first) || !next_backward(it->first) ? model_.gathered.erase(it) : std::next(it);
  }

  // The index of the target's next pre_backward in this pass, if no forward of it comes first.
  std::optional<std::size_t> next_backward(const std::string& target) const {
    for (std::size_t j = k_ + 1; j < ev_.size(); ++j) {
      if (ev_[j].category == Category::Train && ev_[j].event == Event::BackwardEnd) break;
      if (ev_[j].group != target) continue;
      if (ev_[j].event == Event::PreForward) break;
      if (ev_[j].event == Event::PreBackwardBegin) return j;
    }
    return std::nullopt;
  }

  bool recovered_at(int step) const {
    return std::any_of(r_.recoveries.begin(), r_.recoveries.end(), [&](const RecoveryRecord& rr) { return rr.step == step; });
  }

  std::string where(const memory::TimelineEvent& e) const {
    return "rank " + std::to_string(r_.rank) + " step " + std::to_string(e.step + 1) + ", event #" + std::to_string(k_) +
           " " + memory::name_of(e.event) + " of " + e.group;
  }

  const memory::TimelineEvent* before() const { return k_ == 0 ? nullptr : &ev_[k_ - 1]; }

  std::string duplicate_all_gather(const memory::TimelineEvent& e) {
    const std::string state = e.state().value_or("?");
    const auto earlier = model_.gathered.find(e.group);
    const bool gathered_before = earlier != model_.gathered.end();
    const std::size_t earlier_at = gathered_before ? earlier->second : 0;
    model_.gathered[e.group] = k_;
    const std::string again = "duplicate all-gather: " + e.group + " was all-gathered again (state " + state + ")";
    if (const memory::TimelineEvent* prev = before()) {
      if (contains(prev->pending_all_gather, e.group)) return again + " while its earlier all-gather was still pending, unconsumed";
      if (contains(prev->unsharded, e.group)) return again + " while it already held its unsharded parameters";
    }
    if (gathered_before)
      return again + "; its all-gather at event #" + std::to_string(earlier_at) + " (state " +
             ev_[earlier_at].state().value_or("?") +
             ") was not resharded, finalized or dropped by a policy that allows it since: it was thrown away";
    return "";
  }

  std::string recorded_forward(const memory::TimelineEvent& e) {
    if (e.in_backward() && !p_.records_forward_in_backward) return "";
    model_.indices[e.group].push_back(static_cast<int>(model_.post_forward_order.size()));
    model_.post_forward_order.push_back(e.group);
    model_.in_pre_backward.erase(e.group);
    return "";
  }

  // A prefetch that was not skipped all-gathers a sharded target at once; a skip is strict's guard
  // and only of a target that finished backward or runs none later in this pass.
  std::string prefetch_outcome(const memory::TimelineEvent& e) const {
    const std::string target = e.prefetch_target().value_or("");
    const std::string pass = e.prefetch_pass().value_or("");
    const std::string issuer = e.group == kExplicitIssuer ? "an explicit " + pass + " list" : e.group;
    if (e.skipped()) return skipped_prefetch(e, issuer, target);
    const memory::TimelineEvent* prev = before();
    if (!prev || contains(prev->unsharded, target) || contains(prev->pending_all_gather, target)) return "";
    const std::string state = pass == "backward" ? "PRE_BACKWARD" : "FORWARD";
    const bool gathered = k_ + 1 < ev_.size() && ev_[k_ + 1].event == Event::AllGatherIssued &&
                          ev_[k_ + 1].group == target && ev_[k_ + 1].state() == state;
    if (gathered) return "";
    return "missing prefetch: " + issuer + " prefetched " + target + " (sharded, nothing pending) but no all-gather in " +
           state + " followed";
  }

  std::string skipped_prefetch(const memory::TimelineEvent& e, const std::string& issuer,
                               const std::string& target) const {
    const std::string why = e.skipped().value_or("");
    if (!p_.skips_pointless_prefetch)
      return issuer + " skipped its prefetch of " + target + " (\"" + why + "\"), a guard this profile does not have";
    const memory::TimelineEvent* prev = before();
    const bool finished = prev && contains(prev->finished_backward, target);
    if (finished) return "";
    // A reentrant recompute runs the target's forward again, with grad: the guard judged the hooks
    // of the no_grad forward before it, and the recompute gathers the target itself.
    if (const auto j = next_backward(target))
      return "missing prefetch: " + issuer + " skipped its prefetch of " + target + " (\"" + why + "\"), but " + target +
             " runs backward later in this pass (event #" + std::to_string(*j) + ")";
    return "";
  }

  // The prefetch events from `from` on with this issuer and pass, all-gathers between them
  // skipped; stops at the first other event.
  std::vector<std::string> prefetches_from(std::size_t from, const std::string& issuer, const std::string& pass,
                                           std::size_t end) const {
    std::vector<std::string> out;
    for (std::size_t j = from; j < end; ++j) {
      const memory::TimelineEvent& x = ev_[j];
      if (x.event == Event::AllGatherIssued) continue;
      if (x.event != Event::Prefetch || x.group != issuer || x.prefetch_pass() != pass) break;
      out.push_back(x.prefetch_target().value_or(""));
    }
    return out;
  }

  std::string forward_list_honoured(const memory::TimelineEvent& e) {
    model_.in_pre_backward.erase(e.group);
    if (!p_.lists_checkable) return "";
    auto it = p_.forward_list.find(e.group);
    const std::vector<std::string> expected = it == p_.forward_list.end() ? std::vector<std::string>{} : it->second;
    const std::vector<std::string> issued = prefetches_from(k_ + 1, kExplicitIssuer, "forward", ev_.size());
    if (issued == expected) return "";
    if (it == p_.forward_list.end() && issued.empty()) return "";
    return "forward prefetch list not honoured: " + e.group + "'s forward list is " +
           (it == p_.forward_list.end() ? std::string("absent") : listed(expected)) + ", its pre_forward prefetched " +
           listed(issued);
  }

  std::string pre_backward(const memory::TimelineEvent& e) {
    std::size_t end = k_ + 1;
    while (end < ev_.size() && !(ev_[end].event == Event::PreBackwardEnd && ev_[end].group == e.group)) ++end;
    if (end == ev_.size()) return "";  // the run stopped inside the hook
    const bool first = model_.in_pre_backward.insert(e.group).second;
    const std::vector<std::string>* list = p_.backward_of(e.group);
    std::string finding = implicit_prefetch(e, first && !list, end);
    if (!finding.empty() || !p_.lists_checkable) return finding;
    const std::vector<std::string> issued = prefetches_from(end + 1, kExplicitIssuer, "backward", ev_.size());
    const std::vector<std::string> expected = list ? *list : std::vector<std::string>{};
    if (issued == expected) return "";
    return "backward prefetch list not honoured: " + e.group + "'s backward list is " +
           (list ? listed(expected) : std::string("absent (implicit prefetch)")) + ", its pre_backward prefetched " +
           listed(issued) + " explicitly";
  }

  std::string implicit_prefetch(const memory::TimelineEvent& e, bool owed, std::size_t end) {
    std::optional<std::string> expected;
    std::string why;
    if (owed) {
      std::vector<int>& idx = model_.indices[e.group];
      if (!idx.empty()) {
        const int cur = idx.back();
        idx.pop_back();
        if (cur > 0) {
          expected = model_.post_forward_order[static_cast<std::size_t>(cur - 1)];
          why = " (its last recorded forward is #" + std::to_string(cur) + " of the post-forward order; #" +
                std::to_string(cur - 1) + " is " + *expected + ")";
        }
      }
    }
    std::vector<std::string> implicit;
    for (std::size_t j = k_ + 1; j < end; ++j)
      if (ev_[j].event == Event::Prefetch && ev_[j].group == e.group)
        implicit.push_back(ev_[j].prefetch_target().value_or(""));
    if (!expected && implicit.empty()) return "";
    if (expected && implicit.size() == 1 && implicit.front() == *expected) return "";
    if (!expected) {
      const std::string reason = !owed ? (p_.backward_of(e.group) ? "its explicit backward list replaces it"
                                                                  : "it is not this pass's first pre_backward")
                                       : "no earlier forward was recorded before its own";
      return "unexpected implicit backward prefetch of " + listed(implicit) + ": " + reason;
    }
    if (implicit.empty()) return "missing prefetch: the implicit backward prefetch of " + *expected + " was not issued" + why;
    return "wrong prefetch target: the implicit backward prefetch went to " + listed(implicit) + ", expected " + *expected +
           why;
  }

  const Policy& p_;
  const RankRecord& r_;
  const Events& ev_;
  std::size_t k_ = 0;
  Replay model_;
};

}  // namespace

Verdict check_prefetch_schedule_honoured(const Scenario& sc, const RunRecord& run) {
  if (run.backend == "torch")
    return {kName, true, true, "skipped: the torch backend's events are upstream's own schedule, the policy itself"};
  std::set<std::string> groups;  // states with a group of their own: those that record events
  for (const RankRecord& r : run.ranks)
    for (const auto& e : r.timeline)
      if (e.category == Category::Fsdp && e.event == Event::PreForward) groups.insert(e.group);
  const Policy policy = Policy::of(sc, groups);
  for (const RankRecord& r : run.ranks) {
    std::string finding = RankCheck(policy, r).first_finding();
    if (!finding.empty()) return {kName, false, false, finding};
  }
  return {kName, true, false, "every prefetch targeted, issued and skipped as the policy prescribes"};
}

}  // namespace shardfuzz::harness
