// A finding's files: the reproducer (the minimal scenario with its expected verdict under every
// profile, harness/reproducer.h) and its HTML report beside it.
#pragma once

#include "fuzz/campaign/case_runner.h"
#include "fuzz/campaign/finding.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <ostream>
#include <string>

namespace shardfuzz::fuzz {

class CasePool;

// Writes the reproducer for a shrunk failure into `dir` (expected verdicts under every profile, from
// `pool` side by side when given, else from `runner`: isolated when it is; nullptr: in this process).
// A name another reproducer in `dir` has already takes a suffix. Returns its path.
std::string write_reproducer(const harness::Scenario& minimal, const std::string& property, const std::string& message,
                             const std::string& dir, const std::string& found_by, const std::string& zoo = "",
                             CaseRunner* runner = nullptr, const nlohmann::json& differential = nullptr,
                             CasePool* pool = nullptr);

// The finding's HTML report beside its reproducer (same name, .html), from one more run of the
// minimal scenario: in a child when `isolation` is given (the run may be what kills a process).
// Returns its path, or "" after saying why there is none on `out`.
std::string write_finding_report(const Finding& f, harness::Backend& backend,
                                 const std::optional<harness::isolation::Limits>& isolation, std::ostream& out);

}  // namespace shardfuzz::fuzz
