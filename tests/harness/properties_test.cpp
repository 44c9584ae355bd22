// The properties on known cases: the seed leak's minimal form (one gated checkpointed block, nested
// experts, a separately wrapped head) fails per_layer_return_to_baseline under torch-2.9 only; the
// frozen-prefix implicit prefetch (a shipped torch limitation) fails it under torch-2.11 but not
// strict; the standard small scenario passes every property under strict.
#include "harness/properties/property.h"
#include "harness/reference/reference.h"
#include "harness/scenario/scenario_json.h"
#include "harness/scenario/standard_scenarios.h"
#include "harness/backends/threads/threads_backend.h"
#include "tests/harness/fault_test_support.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace shardfuzz::harness {
namespace {

std::string verdict_of(const Scenario& sc) {
  RunRecord run = run_threads(sc);
  auto verdicts = check_properties(sc, run);
  const Verdict* f = first_failure(verdicts);
  return f ? f->property + ": " + f->message : "pass";
}

Scenario minimal_seed(const std::string& profile) {
  Scenario sc = nested_experts_scenario(1, true, 2, profile, 3);
  sc.dims = {8, 8, 2, 4};
  return sc;
}

TEST(Properties, MinimalSeedLeakFailsPerLayerUnderTorch29Only) {
  std::string v = verdict_of(minimal_seed("torch-2.9"));
  EXPECT_EQ(v.rfind("per_layer_return_to_baseline", 0), 0u) << v;
  EXPECT_NE(v.find("out"), std::string::npos) << v;  // the head's all-gather is the stale one
  EXPECT_EQ(verdict_of(minimal_seed("torch-2.11")), "pass");
  EXPECT_EQ(verdict_of(minimal_seed("strict")), "pass");
}

TEST(Properties, FrozenPrefixPrefetchIsAFindingUnderTorch211ButNotStrict) {
  Scenario sc = nested_experts_scenario(3, false, 2, "torch-2.11", 2);
  sc.dims = {8, 8, 2, 4};
  sc.blocks[0].frozen = true;
  sc.input_requires_grad = false;
  std::string v = verdict_of(sc);
  EXPECT_EQ(v.rfind("per_layer_return_to_baseline", 0), 0u) << v;
  EXPECT_NE(v.find("layers.0"), std::string::npos) << v;  // block 0 never runs backward, yet was prefetched
  // Found at the first post_backward the all-gather outlives (issue 23), not only at finalize_backward.
  EXPECT_NE(v.find(", post_backward of "), std::string::npos) << v;
  EXPECT_NE(v.find("is pending and will never be consumed: layers.0"), std::string::npos) << v;
  sc.profile = semantics::Profile::named("strict");
  EXPECT_EQ(verdict_of(sc), "pass");
}

// A bfloat16 run whose loss grows tenfold a step (a single root group at world 4, found by a
// 5-minute strict campaign on the correct runtime) ends a few percent off its reference from
// rounding alone: its float32 twin is 16% away from either. Parity compares the steps before the
// growth there, and every step and shard of the float32 twin.
TEST(Properties, ParityInBfloat16ComparesOnlyTheStepsBeforeTheLossGrows) {
  Scenario sc = load_scenario(std::string(SHARDFUZZ_SOURCE_DIR) + "/tests/harness/cases/bf16_growing_loss.json");
  const Verdict bf16 = check_parity_with_reference(sc, run_threads(sc));
  EXPECT_TRUE(bf16.ok) << bf16.message;
  EXPECT_NE(bf16.message.find("the first 1 step(s)' losses match"), std::string::npos) << bf16.message;
  sc.dtype = "float32";
  const Verdict f32 = check_parity_with_reference(sc, run_threads(sc));
  EXPECT_TRUE(f32.ok) << f32.message;
  EXPECT_EQ(f32.message, "losses and shards match the reference");
}

// AdamW in bfloat16 at world 1: the runtime's update must round as torch.optim.AdamW does (sqrt of
// the second moment, then divided by sqrt of its bias correction), or an ulp on a near-zero gradient
// becomes a full-sized step and the loss ends 2.1% off after 3 steps (found by a coverage-guided
// campaign once the reference stepped with torch::optim::AdamW).
TEST(Properties, Bfloat16AdamWMatchesTorchOptimAtWorld1) {
  const Scenario sc = load_scenario(std::string(SHARDFUZZ_SOURCE_DIR) + "/tests/harness/cases/bf16_adamw_world1.json");
  const Verdict v = check_parity_with_reference(sc, run_threads(sc));
  EXPECT_TRUE(v.ok) << v.message;
  EXPECT_EQ(v.message, "losses and shards match the reference");
}

// A shrink step judges the properties up to the one it must reproduce, and needs the unsharded
// reference only when parity comes no later (issue 24: the reference is a third of a case's CPU).
TEST(Properties, JudgingUpToAPropertyStopsThereAndSkipsTheReferenceBeforeParity) {
  EXPECT_FALSE(needs_reference("per_layer_return_to_baseline"));
  EXPECT_FALSE(needs_reference("liveness"));
  EXPECT_TRUE(needs_reference("parity_with_reference"));
  EXPECT_TRUE(needs_reference("peak_within_bound"));
  EXPECT_TRUE(needs_reference(""));
  EXPECT_TRUE(needs_reference("process_survives"));  // not a property of the list: everything is judged
  const Scenario sc = minimal_seed("torch-2.9");
  RunOptions without_reference;
  without_reference.reference = false;
  const RunRecord run = run_threads(sc, without_reference);
  const auto upto = check_properties(sc, run, "per_layer_return_to_baseline");
  ASSERT_FALSE(upto.empty());
  EXPECT_EQ(upto.back().property, "per_layer_return_to_baseline");
  EXPECT_FALSE(upto.back().ok);
  EXPECT_LT(upto.size(), all_properties().size());
  const auto all = check_properties(sc, run);
  EXPECT_EQ(all.size(), all_properties().size());
  EXPECT_EQ(first_failure(all)->property, first_failure(upto)->property);
}

// bfloat16 parity allows what rounding alone moves the scenario: twice the distance between its
// reference in bfloat16 and in float32, relative to the loss, the largest over the step's ranks
// (found on the GPU host,
// whose torch 2.11 kernels put a world-5 run 0.022 from its reference at step 2, both about 0.012
// from float32). A difference past that is still a finding, and says what was allowed.
TEST(Properties, Bfloat16ParityAllowsTheScenariosOwnRoundingAndNoMore) {
  const Scenario sc = load_scenario(std::string(SHARDFUZZ_SOURCE_DIR) + "/tests/harness/cases/bf16_world5_attention.json");
  RunRecord run = run_threads(sc);
  ASSERT_TRUE(check_parity_with_reference(sc, run).ok);
  double slack = 0;
  for (int r = 0; r < sc.world_size; ++r)
    slack = std::max(slack, 2 * std::abs(rounding_twin_of(sc)->losses[1][r] - run.reference->losses[1][r]));

  const double want = run.reference->losses[1][4];
  ASSERT_GT(slack, 1e-3) << "the scenario must be sensitive to rounding for this test to mean anything";
  const double tolerance = Tolerances::kParityRelativeBf16 * std::max(1.0, std::abs(want));
  run.ranks[4].losses[1] = want + tolerance + 0.5 * slack;
  const Verdict within = check_parity_with_reference(sc, run);
  EXPECT_TRUE(within.ok) << within.message;
  run.ranks[4].losses[1] = want + tolerance + slack + 0.01;
  const Verdict past = check_parity_with_reference(sc, run);
  EXPECT_FALSE(past.ok);
  EXPECT_NE(past.message.find("rank 4 step 2"), std::string::npos) << past.message;
  EXPECT_NE(past.message.find("for low-precision rounding"), std::string::npos) << past.message;
}

// Rounding moves the weights every rank shares; which rank's loss shows it most is chance. A world-7
// bfloat16 run (found by a 10-minute strict campaign) missed its reference by 0.027 at step 3 on a
// rank whose own twin distance was 0.0009, while another rank's was 0.101.
TEST(Properties, Bfloat16ParityTakesTheStepsRoundingOverEveryRank) {
  const Scenario sc = load_scenario(std::string(SHARDFUZZ_SOURCE_DIR) + "/tests/harness/cases/bf16_world7_moe.json");
  const RunRecord run = run_threads(sc);
  const Verdict v = check_parity_with_reference(sc, run);
  EXPECT_TRUE(v.ok) << v.message;
}

// A float32 run whose loss explodes (6.7 -> -10 -> -384: the mean-output loss is unbounded below)
// amplifies the last bits of its formulas: the runtime's own and libtorch's autograd (the
// reference's) ended an attention bias 1.5e-4 of its scale apart, with losses within 3e-6 (found by
// a 10-minute strict campaign). Its float64 twin measures that; a well-conditioned float32 run's twin
// sits within 1e-6, so its shards are held to the tolerance.
TEST(Properties, Float32ParityAllowsWhatItsFloat64TwinShowsAndNoMore) {
  const Scenario chaotic =
      load_scenario(std::string(SHARDFUZZ_SOURCE_DIR) + "/tests/harness/cases/f32_world1_exploding_loss.json");
  const RunRecord run = run_threads(chaotic);
  const Verdict v = check_parity_with_reference(chaotic, run);
  EXPECT_TRUE(v.ok) << v.message;

  Scenario calm = standard_small_scenario("strict");
  calm.steps = 3;
  RunRecord ok = run_threads(calm);
  ASSERT_TRUE(check_parity_with_reference(calm, ok).ok);
  const std::shared_ptr<const Reference> twin = rounding_twin_of(calm);
  for (const auto& [fqn, p] : ok.reference->parameters) {
    const double scale = std::max(1.0, p.abs().max().item<double>());
    const at::Tensor gap = twin->parameters.at(fqn).to(at::kDouble).sub(p.to(at::kDouble));
    EXPECT_LT(gap.abs().max().item<double>(), 1e-6 * scale) << fqn;
  }
  ShardRecord& shard = ok.ranks.at(0).shards.at(0);
  const double scale = std::max(1.0, shard.local.abs().max().item<double>());
  shard.local = shard.local.clone();
  shard.local.view({-1})[0] += 2 * Tolerances::kParityRelative * scale;
  const Verdict past = check_parity_with_reference(calm, ok);
  EXPECT_FALSE(past.ok);
  EXPECT_NE(past.message.find("for float32 rounding"), std::string::npos) << past.message;
}

TEST(Properties, StandardSmallScenarioPassesEveryPropertyUnderStrict) {
  Scenario sc = standard_small_scenario("strict");
  sc.steps = 3;
  RunRecord run = run_threads(sc);
  for (const Verdict& v : check_properties(sc, run)) EXPECT_TRUE(v.ok) << v.property << ": " << v.message;
}

// Every ledger kind is judged at each post_backward (issue 23): a leak of a buffer the ledger does
// account for passes the allocator comparison (the ledger explains the growth), so the kinds are
// checked against the schedule itself. The run is correct; its timeline is then given the leak.
TEST(Properties, EachLedgerKindIsJudgedAtEveryPostBackwardAndNamed) {
  const Scenario sc = minimal_seed("strict");
  const RunRecord good = run_threads(sc);
  ASSERT_FALSE(any_failure(check_properties(sc, good)));
  auto post_backwards = [](RunRecord& run) {
    std::vector<memory::TimelineEvent*> out;
    for (auto& e : run.ranks[0].timeline)
      if (e.event == memory::Event::PostBackward && e.step == 0) out.push_back(&e);
    return out;
  };
  const auto kind = [](memory::BufferKind k) { return static_cast<std::size_t>(k); };
  // The previous group's reduce-scatter input kept beside this one's (K = 2 instead of upstream's 1).
  RunRecord kept = good;
  auto events = post_backwards(kept);
  ASSERT_GE(events.size(), 2u);
  events[1]->ledger[kind(memory::BufferKind::ReduceScatterInput)] += events[0]->ledger[kind(memory::BufferKind::ReduceScatterInput)];
  const Verdict v = check_per_layer_return_to_baseline(sc, kept);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.message.find("post_backward of " + events[1]->group + ": reduce_scatter_input holds"), std::string::npos) << v.message;
  // Sharded parameters that grow during backward.
  RunRecord grown = good;
  post_backwards(grown).back()->ledger[kind(memory::BufferKind::ShardedParam)] += 64;
  const Verdict w = check_per_layer_return_to_baseline(sc, grown);
  EXPECT_FALSE(w.ok);
  EXPECT_NE(w.message.find("sharded_param bytes changed within one backward pass"), std::string::npos) << w.message;
  // A second deferred all-gather kept beside the first (the single slot not dropped).
  RunRecord twice = good;
  post_backwards(twice).front()->ledger[kind(memory::BufferKind::DeferredAllGather)] += int64_t{1} << 30;
  const Verdict d = check_per_layer_return_to_baseline(sc, twice);
  EXPECT_FALSE(d.ok);
  EXPECT_NE(d.message.find("deferred_all_gather holds"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("of the largest group's all-gather"), std::string::npos) << d.message;
}

// reshard_after_forward=N keeps the 1/N slice upstream keeps (1 < N < the shard group's size) and
// nothing for N equal to the size: the ledger's sharded_post_forward bytes after each forward are
// the expected slices, whichever way a runtime gets them wrong.
TEST(Properties, AnIntReshardAfterForwardKeepsExactlyItsSlice) {
  using testing_support::verdict;
  Scenario sc = standard_small_scenario("strict");
  sc.world_size = 4;
  sc.fully_shard.at("layers.0").reshard_after_forward = fsdp::ReshardAfterForward::ranks(2);
  const RunRecord good = run_threads(sc);
  ASSERT_TRUE(good.ok()) << good.error;
  for (const Verdict& v : check_properties(sc, good)) EXPECT_TRUE(v.ok) << v.property << ": " << v.message;
  const auto slices = static_cast<std::size_t>(memory::BufferKind::ShardedPostForward);
  RunRecord resharded_fully = good;  // N = 2 of 4 behaving as True
  for (auto& e : resharded_fully.ranks[1].timeline) e.ledger[slices] = 0;
  Verdict v = verdict(check_properties(sc, resharded_fully), "reshard_after_forward_honoured");
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.message.find("rank 1 step 1: after the forward, sharded_post_forward holds 0 bytes, expected "),
            std::string::npos) << v.message;
  EXPECT_NE(v.message.find("the 1/N slices of layers.0 (N=2 of 4: "), std::string::npos) << v.message;

  sc.fully_shard.at("layers.0").reshard_after_forward = fsdp::ReshardAfterForward::ranks(4);  // as True
  RunRecord kept_a_clone = run_threads(sc);
  ASSERT_TRUE(verdict(check_properties(sc, kept_a_clone), "reshard_after_forward_honoured").ok);
  for (auto& e : kept_a_clone.ranks[0].timeline) e.ledger[slices] += 96;
  v = verdict(check_properties(sc, kept_a_clone), "reshard_after_forward_honoured");
  EXPECT_NE(v.message.find("holds 96 bytes, expected 0 (no group has an int reshard_after_forward"), std::string::npos)
      << v.message;
}

// The converse: a group asked to keep its parameters after forward (False, the int 1, "auto" on the
// root) must still hold them unsharded at the end of every forward, or it gathers them again in
// backward (real torch 2.11's recorded traces: 154 such post_forwards, every one still unsharded).
TEST(Properties, AGroupAskedToKeepItsParametersAfterForwardKeepsThem) {
  using testing_support::verdict;
  Scenario sc = standard_small_scenario("strict");
  sc.world_size = 2;
  sc.fully_shard.at("layers.0").reshard_after_forward = fsdp::ReshardAfterForward::no();
  sc.fully_shard.erase("out");  // the root then holds the head's parameters
  const RunRecord good = run_threads(sc);
  ASSERT_TRUE(good.ok()) << good.error;
  ASSERT_TRUE(verdict(check_properties(sc, good), "reshard_after_forward_honoured").ok);
  for (const std::string group : {"layers.0", "root"}) {
    RunRecord resharded = good;
    for (auto& e : resharded.ranks[1].timeline) {
      if (e.event != memory::Event::ForwardEnd) continue;
      e.unsharded.erase(std::remove(e.unsharded.begin(), e.unsharded.end(), group), e.unsharded.end());
    }
    const Verdict v = verdict(check_properties(sc, resharded), "reshard_after_forward_honoured");
    EXPECT_FALSE(v.ok) << group;
    const std::string raf = group == "root" ? "auto, the root" : "false";
    EXPECT_NE(v.message.find("rank 1 step 1: after the forward, group " + group + " (reshard_after_forward=" + raf +
                             ") no longer holds its unsharded parameters: it resharded"),
              std::string::npos)
        << v.message;
  }
}

// The peak figures rely on the probe's peak restarting at training's start; a reset that keeps the
// build's high-water mark inflates every one of them. Across steps every ledger kind ends flat.
TEST(Properties, ThePeakRestartsAtTrainingAndEveryLedgerKindEndsEachStepFlat) {
  using testing_support::verdict;
  Scenario sc = standard_small_scenario("strict");
  sc.steps = 2;
  const RunRecord good = run_threads(sc);
  for (const Verdict& v : check_properties(sc, good)) EXPECT_TRUE(v.ok) << v.property << ": " << v.message;
  EXPECT_EQ(good.ranks[1].peak_above_current_at_reset, 0);

  RunRecord kept_build_peak = good;
  kept_build_peak.ranks[1].peak_above_current_at_reset = 4096;
  const Verdict peak = verdict(check_properties(sc, kept_build_peak), "peak_within_bound");
  EXPECT_NE(peak.message.find("rank 1: the training peak did not restart at training's start"), std::string::npos)
      << peak.message;

  RunRecord leaked = good;  // a deferred all-gather's bytes left under pending_all_gather by step 2's end
  const auto pending = static_cast<std::size_t>(memory::BufferKind::PendingAllGather);
  for (auto& e : leaked.ranks[0].timeline)
    if (e.step == 1) e.ledger[pending] += 512;
  const Verdict flat = verdict(check_properties(sc, leaked), "flat_end_of_step_memory");
  EXPECT_NE(flat.message.find("rank 0 step 2: pending_all_gather holds"), std::string::npos) << flat.message;
  EXPECT_NE(flat.message.find("(512 bytes;"), std::string::npos) << flat.message;

  // A gradient zero_grad left in the ledger, as small as any: flat across steps, but not zero.
  const auto grad = static_cast<std::size_t>(memory::BufferKind::Grad);
  for (int steps : {1, 2}) {
    sc.steps = steps;
    RunRecord kept_grad = run_threads(sc);
    ASSERT_TRUE(verdict(check_properties(sc, kept_grad), "flat_end_of_step_memory").ok);
    for (auto& e : kept_grad.ranks[1].timeline)
      if (e.event == memory::Event::ZeroGrad || e.event == memory::Event::StepEnd) e.ledger[grad] += 16;
    const Verdict g = verdict(check_properties(sc, kept_grad), "flat_end_of_step_memory");
    EXPECT_FALSE(g.ok) << steps;
    EXPECT_NE(g.message.find("rank 1 step 1: grad holds 16 bytes after zero_grad"), std::string::npos) << g.message;
  }
  // A reduce-scatter input the step's last backward should have dropped (is_last_backward never set).
  RunRecord kept_input = run_threads(sc);
  const auto input = static_cast<std::size_t>(memory::BufferKind::ReduceScatterInput);
  for (auto& e : kept_input.ranks[0].timeline)
    if (e.event == memory::Event::ZeroGrad) e.ledger[input] += 320;
  const Verdict k = verdict(check_properties(sc, kept_input), "flat_end_of_step_memory");
  EXPECT_NE(k.message.find("rank 0 step 1: reduce_scatter_input holds 320 bytes after zero_grad (the step's last "
                           "backward drops the pending reduce-scatter state"),
            std::string::npos)
      << k.message;
}

TEST(Properties, LivenessReportsACollectiveMismatchByKind) {
  RunRecord run;
  run.ranks.resize(2);
  run.error = "rank 1: collective mismatch in group 'dp' at sequence 3";
  run.error_kind = "collective_mismatch";
  Scenario sc;
  auto verdicts = check_properties(sc, run);
  ASSERT_FALSE(verdicts.front().ok);
  EXPECT_EQ(verdicts.front().property, "liveness");
  EXPECT_NE(verdicts.front().message.find("collective_mismatch"), std::string::npos);
  for (std::size_t i = 1; i < verdicts.size(); ++i) EXPECT_TRUE(verdicts[i].skipped);
}

}  // namespace
}  // namespace shardfuzz::harness
