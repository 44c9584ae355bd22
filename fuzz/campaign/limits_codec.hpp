// An isolated case's limits in JSON (a plan field whose form is its own), for the house's record visitors
// (harness/scenario/field_visitors.hpp). Internal to fuzz/campaign: plan.cpp and state.cpp.
#pragma once

#include "harness/isolation/child_outcome.h"
#include "harness/scenario/field_visitors.hpp"

namespace shardfuzz::harness::fields_detail {

// An isolated case's limits: {"case_timeout_ms": ..., "case_memory_bytes": ...}; absent: no isolation.
template <>
struct Codec<isolation::Limits> {
  static constexpr bool omit_when_empty = false;
  static const char* type() { return "object: case_timeout_ms, case_memory_bytes"; }
  template <class Json>
  static Json write(const isolation::Limits& l) {
    return Json{{"case_timeout_ms", l.wall.count()}, {"case_memory_bytes", l.memory_bytes}};
  }
  static isolation::Limits read(const json& v, const std::string& path) {
    reject_unknown_keys(v, path, {"case_timeout_ms", "case_memory_bytes"});
    isolation::Limits l;
    if (v.contains("case_timeout_ms"))
      l.wall = std::chrono::milliseconds(read_int64(v.at("case_timeout_ms"), member(path, "case_timeout_ms")));
    if (v.contains("case_memory_bytes")) l.memory_bytes = read_int64(v.at("case_memory_bytes"), member(path, "case_memory_bytes"));
    return l;
  }
  static void check(const std::string& path, const isolation::Limits& l) {
    if (l.wall.count() < 1 || l.wall.count() > int64_t{7} * 24 * 3600 * 1000)
      reject(path == "--no-isolation" ? "--case-timeout" : member(path, "case_timeout_ms"),
             std::to_string(l.wall.count()) + " ms outside [1 ms, 7 days]");
    constexpr int64_t kMiB = int64_t{1} << 20;
    if (l.memory_bytes < 64 * kMiB || l.memory_bytes > (int64_t{1} << 22) * kMiB)
      reject(path == "--no-isolation" ? "--case-memory-mb" : member(path, "case_memory_bytes"),
             std::to_string(l.memory_bytes / kMiB) + " MiB outside [64, 4194304]");
  }
};

}  // namespace shardfuzz::harness::fields_detail
