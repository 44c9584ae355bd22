// Running a RapidCheck property inside a GoogleTest test with our own case count and a fixed seed
// (RC_PARAMS still overrides nothing here: the counts are part of the test), reporting
// RapidCheck's message — with the shrunk counterexample — as the gtest failure.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <utility>

namespace shardfuzz::fuzz::testing {

template <typename Testable>
void check_property(const std::string& name, int cases, uint64_t seed, Testable&& testable) {
  rc::detail::TestParams params;
  params.seed = seed;
  params.maxSuccess = cases;
  params.maxSize = 100;
  rc::detail::TestMetadata metadata;
  metadata.id = name;
  metadata.description = name;
  const auto result = rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params);
  std::ostringstream message;
  rc::detail::printResultMessage(result, message);
  EXPECT_TRUE(result.template is<rc::detail::SuccessResult>()) << name << ":\n" << message.str();
}

}  // namespace shardfuzz::fuzz::testing
