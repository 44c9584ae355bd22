// Property fits_device_memory on the threads backend: a scenario with a device-memory budget below
// what it needs fails at the first event past it, naming rank, step, event and group; unbounded or
// ample budgets pass; the field round-trips through JSON.
#include "harness/backends/threads/threads_backend.h"
#include "harness/properties/property.h"
#include "harness/scenario/scenario_json.h"
#include "harness/scenario/standard_scenarios.h"

#include <gtest/gtest.h>

namespace shardfuzz::harness {
namespace {

Scenario small() {
  Scenario sc = nested_experts_scenario(2, true, 2, "strict", 1);
  sc.dims.dim = 8;
  sc.dims.hidden = 8;
  return sc;
}

TEST(FitsDeviceMemory, ABudgetBelowThePeakFailsAtTheFirstEventPastIt) {
  Scenario sc = small();
  const RunRecord unbounded = run_threads(sc);
  const Verdict skip = check_fits_device_memory(sc, unbounded);
  EXPECT_TRUE(skip.ok && skip.skipped) << skip.message;
  int64_t peak = 0;
  for (const auto& r : unbounded.ranks)
    for (const auto& e : r.timeline) peak = std::max(peak, e.allocated_bytes);
  ASSERT_GT(peak, 0);
  sc.device_memory_bytes = peak;  // exactly enough
  const Verdict fits = check_fits_device_memory(sc, run_threads(sc));
  EXPECT_TRUE(fits.ok && !fits.skipped) << fits.message;
  sc.device_memory_bytes = peak / 2;
  const Verdict over = check_fits_device_memory(sc, run_threads(sc));
  EXPECT_FALSE(over.ok);
  EXPECT_NE(over.message.find("over its device memory of " + std::to_string(peak / 2)), std::string::npos) << over.message;
  EXPECT_NE(over.message.find("step 1: after "), std::string::npos) << over.message;
}

TEST(FitsDeviceMemory, TheBudgetRoundTripsAndIsValidated) {
  Scenario sc = small();
  sc.device_memory_bytes = int64_t{80} << 30;
  EXPECT_EQ(scenario_from_json(to_json(sc)).device_memory_bytes, int64_t{80} << 30);
  sc.device_memory_bytes = -1;
  try {
    sc.validate();
    ADD_FAILURE() << "accepted a negative budget";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("device_memory_bytes: -1 outside [0, ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace shardfuzz::harness
