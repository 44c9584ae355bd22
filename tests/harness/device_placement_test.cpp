// Rank tensors on a CUDA device: refused clearly where there is none; where there is one, the
// seed scenarios run event for event as on the CPU, and the device's allocator agrees with the
// ledger within 2 MiB per layer.
#include "fault_test_support.h"
#include "harness/backends/process/process_backend.h"
#include "harness/properties/property.h"
#include "harness/reproducer.h"
#include "harness/backends/threads/threads_backend.h"
#include "runtime/memory/device_memory.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace shardfuzz::harness {
namespace {

Scenario reproducer(const std::string& name) {
  return load_scenario_or_reproducer(std::string(SHARDFUZZ_SOURCE_DIR) + "/reproducers/" + name);
}

RunOptions on(const std::string& device) {
  RunOptions o;
  o.device = device;
  return o;
}

// Everything but the allocator's figures: scheduling, ledger, pending and unsharded groups.
nlohmann::json schedule(const RankRecord& r) {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : r.timeline) {
    nlohmann::json j = e.to_json();
    for (const char* k : {"at_ns", "allocated_bytes", "peak_bytes", "reserved_bytes"}) j.erase(k);
    if (j.contains("detail")) j["detail"].erase("loss");  // CUDA's float sums differ in the last bits
    events.push_back(j);
  }
  return events;
}

// Per block post_backward: the allocator's growth since the previous one minus the ledger's.
void expect_allocator_follows_ledger(const RankRecord& r, int64_t tolerance) {
  const memory::TimelineEvent* prev = nullptr;
  for (const auto& e : r.timeline) {
    if (e.event != memory::Event::PostBackward || e.category != memory::Category::Fsdp) continue;
    if (prev && e.step == prev->step) {
      const int64_t grew = e.allocated_bytes - prev->allocated_bytes;
      const int64_t explained = (e.ledger_total() + e.unsharded_grad_bytes) - (prev->ledger_total() + prev->unsharded_grad_bytes);
      EXPECT_LE(std::llabs(grew - explained), tolerance)
          << "rank " << r.rank << " step " << e.step << " " << e.group << ": allocator grew " << grew
          << " B, the ledger " << explained << " B";
    }
    prev = &e;
  }
}

TEST(DevicePlacement, ACudaDeviceThisBuildOrHostLacksIsRefusedNamingTheFlag) {
  if (memory::cuda_device_available()) GTEST_SKIP() << "this host has a CUDA device";
  try {
    run_threads(testing_support::small(1), on("cuda"));
    FAIL() << "ran on a CUDA device that is not there";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--device"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_threads(testing_support::small(1), on("tpu")), std::invalid_argument);
}

class OnCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!memory::cuda_device_available()) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(OnCuda, RanksAsThreadsShareNoDevice) {
  try {
    run_threads(testing_support::small(2), on("cuda"));
    FAIL() << "two rank threads ran on one CUDA device";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("world_size: 2"), std::string::npos) << e.what();
  }
}

TEST_F(OnCuda, TheWorldOneSeedLeakRunsEventForEventAsOnTheCpu) {
  const Scenario sc = reproducer("seed-leak-dense-mlp-nested-fc1.json");
  const RunRecord cpu = run_threads(sc), cuda = run_threads(sc, on("cuda"));
  ASSERT_EQ(cuda.ranks.size(), 1u);
  EXPECT_EQ(schedule(cuda.ranks[0]), schedule(cpu.ranks[0]));
  expect_allocator_follows_ledger(cuda.ranks[0], int64_t{2} << 20);
  const auto a = check_properties(sc, cpu), b = check_properties(sc, cuda);
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i].ok, b[i].ok) << a[i].property << ": cpu " << a[i].message << " / cuda " << b[i].message;
}

TEST_F(OnCuda, TheWorldFourSeedLeakRunsInRankProcessesOnOneGpu) {
  const Scenario sc = reproducer("seed-leak-gated-moe-nested-experts-ac.json");
  process::ProcessOptions o;
  o.worker = SHARDFUZZ_BINARY;
  o.run.device = "cuda";
  const RunRecord cpu = run_threads(sc), cuda = process::make_process_backend(o)->run(sc);
  ASSERT_TRUE(cuda.ok()) << cuda.error;
  for (std::size_t r = 0; r < cpu.ranks.size(); ++r) {
    EXPECT_EQ(schedule(cuda.ranks[r]), schedule(cpu.ranks[r])) << "rank " << r;
    expect_allocator_follows_ledger(cuda.ranks[r], int64_t{2} << 20);
  }
  const auto a = check_properties(sc, cpu), b = check_properties(sc, cuda);
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i].ok, b[i].ok) << a[i].property << ": cpu " << a[i].message << " / cuda " << b[i].message;
}

}  // namespace
}  // namespace shardfuzz::harness
