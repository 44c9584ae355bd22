// --junit FILE and --summary FILE of `replay` and `fuzz`: the flags, and the reports
// (harness/report/ci_reports.h) written where they say.
#pragma once

#include "harness/report/ci_reports.h"

#include <CLI/App.hpp>
#include <nlohmann/json.hpp>

#include <ostream>
#include <vector>

namespace shardfuzz::app {

using CiReportFlags = harness::CiReportFiles;

void add_ci_report_flags(CLI::App* cmd, CiReportFlags& flags);
// Writes what was asked; false (after saying why on `err`) when a file could not be written.
bool write_ci_reports(const CiReportFlags& flags, const std::vector<harness::JUnitSuite>& suites,
                      const nlohmann::json& summary, std::ostream& err);

}  // namespace shardfuzz::app
