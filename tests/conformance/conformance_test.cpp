// Replays every recorded FSDP2 trace (tests/conformance/recorded: torch 2.11 as shipped and with the
// pre-fix post_forward, world 1-3) on the native runtime: same events, same pending all-gathers
// and unsharded groups after each event. Part of the runtime core's event-order tests.
#include "harness/conformance/replay.h"
#include "harness/files/json_files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace shardfuzz::harness {
namespace {

std::string trace_dir() {
  if (const char* env = std::getenv("SHARDFUZZ_CONFORMANCE_DIR")) return env;
  return SHARDFUZZ_CONFORMANCE_DIR;
}

std::vector<std::string> trace_files() {
  std::vector<std::string> files;
  if (!std::filesystem::is_directory(trace_dir())) return files;
  for (const auto& f : json_files_in(trace_dir(), "conformance")) files.push_back(std::filesystem::path(f).filename().string());
  return files;
}

TEST(Conformance, TraceFolderIsPresent) {
  ASSERT_TRUE(std::filesystem::is_directory(trace_dir())) << "no conformance traces at " << trace_dir();
  EXPECT_GE(trace_files().size(), 72u);  // 66 from ../shared, 6 LoRA traces recorded here
}

class ConformanceTrace : public ::testing::TestWithParam<std::string> {};

TEST_P(ConformanceTrace, ReproducedEventForEvent) {
  ConformanceResult r = replay_trace_file((std::filesystem::path(trace_dir()) / GetParam()).string());
  EXPECT_TRUE(r.ok) << GetParam() << ": " << r.message;
  EXPECT_GT(r.events, 0u);
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param.substr(0, info.param.size() - 5);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Recorded, ConformanceTrace, ::testing::ValuesIn(trace_files()), test_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ConformanceTrace);

}  // namespace
}  // namespace shardfuzz::harness
