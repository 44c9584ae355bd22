// What `replay` and `fuzz` leave for CI dashboards: --junit FILE (JUnit XML, harness/report/junit.h)
// and --summary FILE (the same results as JSON), both written atomically.
#pragma once

#include "harness/report/junit.h"

#include <CLI/App.hpp>
#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace shardfuzz::app {

struct CiReportFlags {
  std::string junit;    // empty: none
  std::string summary;  // empty: none
};

void add_ci_report_flags(CLI::App* cmd, CiReportFlags& flags);
// Writes what was asked; false (after saying why on `err`) when a file could not be written.
bool write_ci_reports(const CiReportFlags& flags, const std::vector<harness::JUnitSuite>& suites,
                      const nlohmann::json& summary, std::ostream& err);

}  // namespace shardfuzz::app
