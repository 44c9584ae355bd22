// Upstream's own expectations as a test suite: every case in tests/upstream/cases (PyTorch's FSDP2
// tests translated into scenarios, tests/upstream/README.md) runs natively under the profile it
// assumes and must show the events, collective counts, unsharded groups, properties and memory
// bounds the upstream test asserts. One test per case, named after it.
#include "harness/expectations/check_case.h"
#include "harness/files/json_files.h"

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <iostream>

namespace shardfuzz::harness::expectations {
namespace {

std::string cases_dir() { return std::string(SHARDFUZZ_SOURCE_DIR) + "/tests/upstream/cases"; }

std::vector<std::string> case_files() {
  if (!std::filesystem::is_directory(cases_dir())) return {};
  return json_files_in(cases_dir(), "upstream cases");
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = std::filesystem::path(info.param).stem().string();
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

TEST(UpstreamSuite, CasesArePresent) {
  ASSERT_TRUE(std::filesystem::is_directory(cases_dir())) << cases_dir();
  EXPECT_GE(case_files().size(), 50u);
}

class UpstreamCase : public ::testing::TestWithParam<std::string> {};

TEST_P(UpstreamCase, HoldsNatively) {
  const ExpectationCase c = load_case(GetParam());
  const CaseResult r = check_case(c);
  for (const auto& m : r.mismatches)
    ADD_FAILURE() << c.name << " (" << c.upstream << ", profile " << c.scenario.profile.name << "): " << m.message();
  for (const auto& m : r.memory)
    std::cout << "[memory] " << c.name << " " << m.where << ": native " << m.measured << " B, formula " << m.formula
              << " B, ratio " << m.ratio << " (rank " << m.rank << ")\n";
}

INSTANTIATE_TEST_SUITE_P(Upstream, UpstreamCase, ::testing::ValuesIn(case_files()), test_name);

}  // namespace
}  // namespace shardfuzz::harness::expectations
