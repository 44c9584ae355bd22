// `shardfuzz shrink FILE`: minimise a failing scenario (same first failing property) and write it.
#pragma once

#include "app/backend_flags.h"

#include <CLI/App.hpp>

#include <ostream>
#include <string>

namespace shardfuzz::app {

struct ShrinkOptions {
  std::string file;
  std::string profile;
  std::string out = "findings";
  int steps = 300;
  double seconds = 120;
  bool keep_world = false;
  BackendFlags backend;
};

CLI::App* add_shrink_command(CLI::App& app, ShrinkOptions& options);
int run_shrink(const ShrinkOptions& options, const std::string& command_line, std::ostream& out, std::ostream& err);

}  // namespace shardfuzz::app
