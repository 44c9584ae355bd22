// --junit and --summary.
#include "app/ci_reports.h"

#include "harness/reproducer.h"

namespace shardfuzz::app {

void add_ci_report_flags(CLI::App* cmd, CiReportFlags& flags) {
  cmd->add_option("--junit", flags.junit, "write the results as JUnit XML there (for CI test reporters)");
  cmd->add_option("--summary", flags.summary, "write the results as JSON there (for CI dashboards)");
}

bool write_ci_reports(const CiReportFlags& flags, const std::vector<harness::JUnitSuite>& suites,
                      const nlohmann::json& summary, std::ostream& err) {
  const auto write = [&](const std::string& path, const std::string& flag, const std::string& text) {
    if (path.empty()) return true;
    try {
      harness::write_file_atomically(path, text);
      return true;
    } catch (const std::exception& e) {
      err << "shardfuzz: " << flag << ": " << e.what() << "\n";
      return false;
    }
  };
  const bool junit = write(flags.junit, "--junit", harness::junit_xml(suites));
  const bool json = write(flags.summary, "--summary", summary.dump(1) + "\n");
  return junit && json;
}

}  // namespace shardfuzz::app
