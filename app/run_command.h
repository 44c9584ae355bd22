// `shardfuzz run FILE`: runs one scenario (or reproducer) and prints the per-layer memory table of
// every rank and the verdict of every property.
#pragma once

#include "app/backend_flags.h"

#include <CLI/App.hpp>

#include <ostream>
#include <string>

namespace shardfuzz::app {

struct RunCommandOptions {
  BackendFlags backend;
  std::string file;
  std::string profile;  // empty: the scenario's own
  int world = 0;        // 0: the scenario's own
  bool json = false;    // print the RunRecord's verdicts and timelines as JSON instead
  int soak = 0;         // > 0: run this many steps with the timeline off and check memory stays flat
  std::string trace;    // non-empty: write the run as a Perfetto / Chrome trace there
  std::string html;     // non-empty: write the HTML report there
};

CLI::App* add_run_command(CLI::App& app, RunCommandOptions& options);
int run_run(const RunCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace shardfuzz::app
