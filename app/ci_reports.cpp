// --junit and --summary.
#include "app/ci_reports.h"

namespace shardfuzz::app {

void add_ci_report_flags(CLI::App* cmd, CiReportFlags& flags) {
  cmd->add_option("--junit", flags.junit, "write the results as JUnit XML there (for CI test reporters)");
  cmd->add_option("--summary", flags.summary, "write the results as JSON there (for CI dashboards)");
}

bool write_ci_reports(const CiReportFlags& flags, const std::vector<harness::JUnitSuite>& suites,
                      const nlohmann::json& summary, std::ostream& err) {
  const harness::CiReportErrors errors = harness::write_ci_reports(flags, suites, summary);
  if (!errors.junit.empty()) err << "shardfuzz: --junit: " << errors.junit << "\n";
  if (!errors.summary.empty()) err << "shardfuzz: --summary: " << errors.summary << "\n";
  return errors.ok();
}

}  // namespace shardfuzz::app
