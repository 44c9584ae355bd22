// `shardfuzz export --torch FILE.json`: print a standalone PyTorch FSDP2 program for a scenario or
// reproducer (harness/backends/torch/repro_script.h), e.g. to attach to an upstream bug report.
#pragma once

#include <CLI/App.hpp>

#include <ostream>
#include <string>

namespace shardfuzz::app {

struct ExportOptions {
  std::string file;
  bool torch = false;
  std::string profile;  // override the scenario's (torch-2.9 emulates the pre-fix post_forward)
  int world = 0;
};

CLI::App* add_export_command(CLI::App& app, ExportOptions& options);
int run_export(const ExportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace shardfuzz::app
