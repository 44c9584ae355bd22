// `shardfuzz replay DIR`: every reproducer against its expected verdict per profile.
#pragma once

#include "fuzz/cli/backend_flags.h"
#include "fuzz/cli/ci_reports.h"

#include <CLI/App.hpp>

#include <ostream>
#include <string>

namespace shardfuzz::cli {

struct ReplayOptions {
  std::string dir = "reproducers";
  BackendFlags backend;
  CiReportFlags reports;
};

CLI::App* add_replay_command(CLI::App& app, ReplayOptions& options);
int run_replay(const ReplayOptions& options, std::ostream& out, std::ostream& err);

}  // namespace shardfuzz::cli
