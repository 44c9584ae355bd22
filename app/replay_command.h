// `shardfuzz replay DIR`: every reproducer against its expected verdict per profile.
#pragma once

#include "app/backend_flags.h"
#include "app/ci_reports.h"

#include <CLI/App.hpp>

#include <ostream>
#include <string>

namespace shardfuzz::app {

struct ReplayOptions {
  std::string dir = "reproducers";
  BackendFlags backend;
  CiReportFlags reports;
};

CLI::App* add_replay_command(CLI::App& app, ReplayOptions& options);
int run_replay(const ReplayOptions& options, std::ostream& out, std::ostream& err);

}  // namespace shardfuzz::app
