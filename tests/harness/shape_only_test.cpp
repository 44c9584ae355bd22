// Shape-only runs (Scenario::shape_only): on LibTorch's meta device the FSDP state machine, hooks,
// AC recompute, prefetch and collectives run as with data — the same events, the same ledger
// bytes, the same allocator bytes where nothing depends on values — and at real sizes a data run
// could never hold; the properties that need values say SKIP.
#include "fault_test_support.h"
#include "harness/backends/process/process_backend.h"
#include "harness/backends/threads/threads_backend.h"
#include "harness/backends/torch/repro_script.h"
#include "harness/properties/property.h"
#include "harness/reproducer.h"
#include "harness/scenario/scenario_json.h"
#include "runtime/nn/routing_assumption.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

namespace shardfuzz::harness {
namespace {

Scenario reproducer(const std::string& name) {
  return load_scenario_or_reproducer(std::string(SHARDFUZZ_SOURCE_DIR) + "/reproducers/" + name);
}

Scenario shape_only(Scenario sc, double skew = 0.0) {
  sc.shape_only = ShapeOnlySpec{skew};
  return sc;
}

// A kernel's scalar temporaries (a few bytes, freed within the op) reach the peak with data only.
constexpr int64_t kScalarTemporaries = 64;

// The schedule and the ledger, event by event; `with_allocator` adds the probe's current bytes
// (the peaks are compared apart, within kScalarTemporaries).
nlohmann::json schedule(const RankRecord& r, bool with_allocator) {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : r.timeline) {
    nlohmann::json j = e.to_json();
    for (const char* k : {"at_ns", "peak_bytes", "reserved_bytes"}) j.erase(k);
    if (!with_allocator) j.erase("allocated_bytes");
    if (j.contains("detail")) j["detail"].erase("loss");
    events.push_back(j);
  }
  return events;
}

void expect_same_run(const Scenario& sc, bool with_allocator) {
  const RunRecord data = run_threads(sc), shapes = run_threads(shape_only(sc));
  ASSERT_TRUE(data.ok()) << data.error;
  ASSERT_TRUE(shapes.ok()) << shapes.error;
  EXPECT_EQ(shapes.device, "meta");
  ASSERT_EQ(shapes.ranks.size(), data.ranks.size());
  for (std::size_t r = 0; r < data.ranks.size(); ++r) {
    const nlohmann::json a = schedule(data.ranks[r], with_allocator), b = schedule(shapes.ranks[r], with_allocator);
    ASSERT_EQ(a.size(), b.size()) << "rank " << r;
    for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(b[i], a[i]) << "rank " << r << " event " << i;
    if (with_allocator) {
      for (std::size_t i = 0; i < a.size(); ++i)
        EXPECT_NEAR(shapes.ranks[r].timeline[i].peak_bytes, data.ranks[r].timeline[i].peak_bytes, kScalarTemporaries)
            << "rank " << r << " event " << i;
      EXPECT_NEAR(shapes.ranks[r].training_peak_bytes, data.ranks[r].training_peak_bytes, kScalarTemporaries) << "rank " << r;
      EXPECT_EQ(shapes.ranks[r].step_end_bytes, data.ranks[r].step_end_bytes) << "rank " << r;
    }
  }
}

TEST(ShapeOnly, ADenseSeedLeakRunsAsWithDataEventForEventAndByteForByte) {
  expect_same_run(reproducer("seed-leak-dense-mlp-nested-fc1.json"), /*with_allocator=*/true);
}

TEST(ShapeOnly, ANestedMoeWithAcAtWorldFourRunsAsWithData) {
  expect_same_run(reproducer("seed-leak-gated-moe-nested-experts-ac.json"), /*with_allocator=*/true);
}

// Routed experts: which expert gets which token depends on values, so the experts' activations
// follow the assumption instead; FSDP's schedule and ledger do not depend on them.
TEST(ShapeOnly, ExpertParallelRoutingKeepsTheScheduleAndTheLedger) {
  Scenario sc = reproducer("zoo-4-liveness-strict_experts_skip_empty-860391.json");
  sc.profile = semantics::Profile::named("strict");  // without the modelled defect it runs to the end
  expect_same_run(sc, /*with_allocator=*/false);
}

TEST(ShapeOnly, PropertiesThatNeedValuesSkipSayingWhyAndTheMemoryOnesJudge) {
  const Scenario sc = shape_only(reproducer("seed-leak-gated-moe-nested-experts-ac.json"));
  const RunRecord run = run_threads(sc);
  ASSERT_TRUE(run.ok()) << run.error;
  const std::vector<Verdict> verdicts = check_properties(sc, run);
  bool judged_memory = false;
  for (const Verdict& v : verdicts) {
    if (v.property == "parity_with_reference") {
      EXPECT_TRUE(v.skipped);
      EXPECT_NE(v.message.find("shape-only"), std::string::npos) << v.message;
    }
    if (v.property == "per_layer_return_to_baseline") {
      EXPECT_FALSE(v.skipped) << v.message;
      EXPECT_FALSE(v.ok) << "the seed leak is a memory finding: a shape-only run must see it";
      judged_memory = true;
    }
  }
  EXPECT_TRUE(judged_memory);
  for (const double loss : run.ranks[0].losses) EXPECT_TRUE(std::isnan(loss)) << "a loss without values";
}

// A model no data run may hold (a 1 GiB budget before sharding): four 8192-wide blocks in
// bfloat16 at world 8. Each block's all-gather is its padded parameters, exactly.
TEST(ShapeOnly, RealSizesBeyondTheDataBudgetRunAndTheAllGathersAreExact) {
  Scenario sc = testing_support::small(8);
  sc.dims.dim = 8192;
  sc.dims.hidden = 28672;
  sc.dims.tokens = 4096;
  sc.dtype = "bfloat16";
  sc.steps = 1;
  sc.blocks.assign(4, BlockSpec{});
  for (BlockSpec& b : sc.blocks) b.kind = BlockSpec::Kind::Mlp;
  sc.fully_shard.clear();
  sc.fully_shard[""] = ShardSpec{};
  for (int i = 0; i < 4; ++i) sc.fully_shard["layers." + std::to_string(i)] = ShardSpec{};
  EXPECT_THROW(sc.validate(), std::invalid_argument) << "a data run of this size must be refused";
  sc.shape_only = ShapeOnlySpec{};
  sc.validate();
  const RunRecord run = run_threads(sc);
  ASSERT_TRUE(run.ok()) << run.error;
  // attn: Linear(8192, 8192); the MLP: Linear(8192, 28672) and Linear(28672, 8192); each with
  // its bias. Every dim divides by the world, so nothing pads: bfloat16 all-gathers 2 B a parameter.
  const int64_t block = (8192 * 8192 + 8192) + (8192 * 28672 + 28672) + (28672 * 8192 + 8192);
  int64_t all_gathers = 0;
  for (const auto& e : run.ranks[0].timeline)
    for (const auto& [group, bytes] : e.pending_all_gather_bytes)
      if (group == "layers.1") {
        EXPECT_EQ(bytes, 2 * block) << e.event << " of " << e.group;
        ++all_gathers;
      }
  EXPECT_GT(all_gathers, 0) << "layers.1's all-gather was never pending";
  for (const ShardRecord& s : run.ranks[0].shards)
    if (s.group == "layers.1") EXPECT_FALSE(s.local.defined()) << s.fqn << ": a shape-only shard has no values";
  EXPECT_GT(run.ranks[0].training_peak_bytes, 2 * block) << "the probe counts meta bytes as real ones";
}

TEST(ShapeOnly, NanFaultsRankProcessesAndTorchAreRefusedNamingTheField) {
  try {
    torch_repro_script(shape_only(testing_support::small(2)));
    FAIL() << "a shape-only scenario was exported to torch";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("shape_only:", 0), 0u) << e.what();
  }
  Scenario sc = shape_only(testing_support::small(2));
  FaultSpec f;
  f.rank = 0;
  f.fault = ModuleFault{ModuleFault::Kind::Nan, "layers.0", 0};
  sc.faults.push_back(f);
  try {
    sc.validate();
    FAIL() << "a nan fault in a shape-only scenario was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("faults[0].kind"), std::string::npos) << e.what();
  }
  process::ProcessOptions o;
  o.worker = SHARDFUZZ_BINARY;
  try {
    process::make_process_backend(o)->run(shape_only(testing_support::small(2)));
    FAIL() << "rank processes ran a shape-only scenario";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("shape_only"), std::string::npos) << e.what();
  }
}

TEST(ShapeOnly, TheScenarioFileCarriesItAndOldFilesReadWithout) {
  const Scenario sc = shape_only(testing_support::small(2), 1.5);
  const Scenario back = scenario_from_json(to_json(sc));
  ASSERT_TRUE(back.shape_only.has_value());
  EXPECT_EQ(back.shape_only->routing_skew, 1.5);
  EXPECT_FALSE(to_json(testing_support::small(2)).contains("shape_only"));
  nlohmann::json bad = to_json(sc);
  bad["shape_only"]["routing_skew"] = -1;
  try {
    scenario_from_json(bad).validate();
    FAIL() << "a negative skew was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("shape_only.routing_skew"), std::string::npos) << e.what();
  }
}

TEST(RoutingAssumption, BalancedSplitsEvenlyAndSkewFavoursTheFirstExperts) {
  const nn::RoutingAssumption balanced{};
  const std::vector<int64_t> even = balanced.counts(16384 * 8, 128);
  EXPECT_EQ(std::accumulate(even.begin(), even.end(), int64_t{0}), 16384 * 8);
  for (int64_t c : even) EXPECT_EQ(c, 1024);
  const std::vector<int64_t> odd = balanced.counts(10, 4);
  EXPECT_EQ(odd, (std::vector<int64_t>{3, 3, 2, 2}));
  const nn::RoutingAssumption zipf{1.0};
  const std::vector<int64_t> skewed = zipf.counts(1000, 4);
  EXPECT_EQ(std::accumulate(skewed.begin(), skewed.end(), int64_t{0}), 1000);
  EXPECT_EQ(skewed, (std::vector<int64_t>{480, 240, 160, 120}));
  EXPECT_NE(zipf.describe().find("1/(e+1)^1"), std::string::npos) << zipf.describe();
}

}  // namespace
}  // namespace shardfuzz::harness
