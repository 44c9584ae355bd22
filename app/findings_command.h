// `shardfuzz findings [--db PATH] [--json] [--status open|fixed|all]`: what the findings database
// (fuzz/findings/findings_db.h) knows, the most recently seen first.
#pragma once

#include <CLI/App.hpp>

#include <ostream>
#include <string>

namespace shardfuzz::app {

struct FindingsOptions {
  std::string db = "findings/findings.db";  // the campaign's default --out is findings/
  bool json = false;
  std::string status = "all";  // open | fixed | all
};

CLI::App* add_findings_command(CLI::App& app, FindingsOptions& options);
int run_findings(const FindingsOptions& options, std::ostream& out, std::ostream& err);

}  // namespace shardfuzz::app
