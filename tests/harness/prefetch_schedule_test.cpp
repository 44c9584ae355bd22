// prefetch_schedule_honoured (issue 23, item 1): correct runs pass under every profile (the seed
// leak's mistargeted prefetch is torch-2.9's policy, not a schedule defect); a run whose events are
// given a wrong target, a missing prefetch, an ignored explicit list, a prefetch that gathers
// nothing, a skip of a group that runs backward or a duplicate all-gather fails, naming the group,
// the event and the target.
#include "harness/backends/threads/threads_backend.h"
#include "harness/properties/property.h"
#include "harness/scenario/standard_scenarios.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <functional>

namespace shardfuzz::harness {
namespace {

using Event = memory::TimelineEvent;

Scenario three_blocks(const std::string& profile) {
  Scenario sc = nested_experts_scenario(3, true, 2, profile, 2);
  sc.dims = {8, 8, 2, 4};
  return sc;
}

// The index of the first event of rank 0 that `match` accepts.
std::size_t first_of(const RunRecord& run, const std::function<bool(const Event&)>& match) {
  const auto& t = run.ranks[0].timeline;
  for (std::size_t i = 0; i < t.size(); ++i)
    if (match(t[i])) return i;
  ADD_FAILURE() << "no such event";
  return 0;
}

bool implicit_backward_prefetch(const Event& e) {
  return e.event == memory::Event::Prefetch && e.group != "(forward state)" && e.prefetch_pass() == "backward" &&
         !e.skipped();
}

Verdict judged(const Scenario& sc, const RunRecord& run) { return check_prefetch_schedule_honoured(sc, run); }

void expect_finding(const Verdict& v, const std::vector<std::string>& words) {
  EXPECT_FALSE(v.ok) << v.message;
  for (const auto& w : words) EXPECT_NE(v.message.find(w), std::string::npos) << "'" << w << "' not in: " << v.message;
}

TEST(PrefetchSchedule, CorrectRunsPassUnderEveryProfile) {
  for (const char* profile : {"strict", "torch-2.11", "torch-2.9", "torch-2.7"}) {
    const Scenario sc = three_blocks(profile);
    const Verdict v = judged(sc, run_threads(sc));
    EXPECT_TRUE(v.ok && !v.skipped) << profile << ": " << v.message;
  }
  Scenario standard = standard_small_scenario("strict");
  const Verdict v = judged(standard, run_threads(standard));
  EXPECT_TRUE(v.ok) << v.message;
}

TEST(PrefetchSchedule, AWrongOrMissingImplicitPrefetchIsNamed) {
  const Scenario sc = three_blocks("strict");
  const RunRecord good = run_threads(sc);
  ASSERT_TRUE(judged(sc, good).ok);
  RunRecord wrong = good;
  const std::size_t k = first_of(wrong, implicit_backward_prefetch);
  const std::string issuer = wrong.ranks[0].timeline[k].group;
  const std::string target = wrong.ranks[0].timeline[k].detail["target"];
  wrong.ranks[0].timeline[k].detail["target"] = issuer;  // prefetches itself: a no-op, lost overlap
  expect_finding(judged(sc, wrong), {"pre_backward_begin of " + issuer, "wrong prefetch target", "went to [" + issuer + "]", "expected " + target});

  RunRecord missing = good;
  auto& t = missing.ranks[0].timeline;
  const bool gathered = t[k + 1].event == memory::Event::AllGatherIssued;
  t.erase(t.begin() + static_cast<long>(k), t.begin() + static_cast<long>(k + (gathered ? 2 : 1)));
  expect_finding(judged(sc, missing), {"missing prefetch", "implicit backward prefetch of " + target, "pre_backward_begin of " + issuer});
}

TEST(PrefetchSchedule, APrefetchThatGathersNothingAndADuplicateAllGatherAreFindings) {
  const Scenario sc = three_blocks("strict");
  const RunRecord good = run_threads(sc);
  const std::size_t k = first_of(good, [](const Event& e) {
    return implicit_backward_prefetch(e);
  });
  const auto& t0 = good.ranks[0].timeline;
  ASSERT_EQ(t0[k + 1].event, memory::Event::AllGatherIssued) << "the first implicit prefetch gathers a sharded block";
  const std::string target = t0[k].detail["target"];

  RunRecord idle = good;  // the prefetch is recorded, its all-gather never issued
  idle.ranks[0].timeline.erase(idle.ranks[0].timeline.begin() + static_cast<long>(k + 1));
  expect_finding(judged(sc, idle), {"missing prefetch", "prefetched " + target, "no all-gather in PRE_BACKWARD"});

  RunRecord twice = good;  // the all-gather issued again while the first is pending
  auto& t = twice.ranks[0].timeline;
  t.insert(t.begin() + static_cast<long>(k + 2), t[k + 1]);
  expect_finding(judged(sc, twice), {"duplicate all-gather", target, "still pending", "event #" + std::to_string(k + 2)});

  // The prefetch's all-gather silently thrown away before its target's backward (strict drops only
  // groups no backward will use), and the target's pre_backward gathers it again.
  RunRecord dropped = good;
  auto& d = dropped.ranks[0].timeline;
  const std::size_t use =
      first_of(dropped, [&](const Event& e) { return e.event == memory::Event::PreBackwardBegin && e.group == target; });
  ASSERT_GT(use, k + 1);
  for (std::size_t j = k + 1; j <= use; ++j) {
    auto& pending = d[j].pending_all_gather;
    pending.erase(std::remove(pending.begin(), pending.end(), target), pending.end());
    auto& unsharded = d[j].unsharded;
    unsharded.erase(std::remove(unsharded.begin(), unsharded.end(), target), unsharded.end());
  }
  d.insert(d.begin() + static_cast<long>(use + 1), d[k + 1]);
  expect_finding(judged(sc, dropped), {"duplicate all-gather", target, "its all-gather at event #" + std::to_string(k + 1),
                                       "thrown away", "event #" + std::to_string(use + 1)});
}

TEST(PrefetchSchedule, ExplicitListsAreHonouredExactlyAndReplaceTheImplicitPrefetch) {
  Scenario sc = three_blocks("strict");
  sc.fully_shard.at("layers.2").backward_prefetch = std::vector<std::string>{"layers.1", "layers.1.moe.experts"};
  sc.fully_shard.at("layers.0").forward_prefetch = std::vector<std::string>{"layers.1"};
  const RunRecord good = run_threads(sc);
  ASSERT_TRUE(good.ok()) << good.error;
  ASSERT_TRUE(judged(sc, good).ok) << judged(sc, good).message;

  RunRecord ignored = good;  // layers.2 also prefetches implicitly, as if its list were not there
  auto& t = ignored.ranks[0].timeline;
  const std::size_t end = first_of(ignored, [](const Event& e) {
    return e.event == memory::Event::PreBackwardEnd && e.group == "layers.2";
  });
  Event implicit = t[end - 1];
  implicit.event = memory::Event::Prefetch;
  implicit.group = "layers.2";
  implicit.detail = {{"target", "layers.1"}, {"pass", "backward"}};
  t.insert(t.begin() + static_cast<long>(end), implicit);
  expect_finding(judged(sc, ignored),
                 {"pre_backward_begin of layers.2", "unexpected implicit backward prefetch of [layers.1]",
                  "explicit backward list replaces it"});

  RunRecord reordered = good;  // the list issued in another order
  const std::size_t j = first_of(reordered, [](const Event& e) {
    return e.event == memory::Event::Prefetch && e.group == "(forward state)" &&
           e.prefetch_target() == "layers.1.moe.experts";
  });
  reordered.ranks[0].timeline[j].detail["target"] = "layers.0";
  expect_finding(judged(sc, reordered), {"backward prefetch list not honoured", "[layers.1, layers.1.moe.experts]", "layers.0]"});

  RunRecord no_forward = good;  // the forward list ignored
  const std::size_t f = first_of(no_forward, [](const Event& e) {
    return e.event == memory::Event::Prefetch && e.prefetch_pass() == "forward";
  });
  no_forward.ranks[0].timeline[f].detail["pass"] = "backward";
  expect_finding(judged(sc, no_forward), {"forward prefetch list not honoured", "layers.0's forward list is [layers.1]"});
}

TEST(PrefetchSchedule, ASkipOfAGroupThatRunsBackwardIsAMissingPrefetch) {
  const Scenario sc = three_blocks("strict");
  RunRecord run = run_threads(sc);
  const std::size_t k = first_of(run, implicit_backward_prefetch);
  auto& t = run.ranks[0].timeline;
  const std::string target = t[k].detail["target"];
  t[k].detail["skipped"] = "target will not run backward";
  if (t[k + 1].event == memory::Event::AllGatherIssued) t.erase(t.begin() + static_cast<long>(k + 1));
  expect_finding(judged(sc, run), {"missing prefetch", "skipped its prefetch of " + target, "runs backward later"});
  // The same skip under a profile without strict's guard is a finding of its own.
  Scenario upstream = sc;
  upstream.profile = semantics::Profile::named("torch-2.11");
  expect_finding(judged(upstream, run), {"a guard this profile does not have"});
}

}  // namespace
}  // namespace shardfuzz::harness
