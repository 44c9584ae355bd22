// `shardfuzz gen --seed S`: print the scenario the generator draws from a seed.
#pragma once

#include <CLI/App.hpp>

#include <cstdint>
#include <ostream>

namespace shardfuzz::app {

struct GenOptions {
  uint64_t seed = 1;
  int size = 50;
  int world = 0;
  std::string profile;
  std::string standard;  // "small": the benchmarks' standard small scenario instead of a draw
  bool format_table = false;  // print the docs' field tables instead
  int stats = 0;              // draw this many cases (as a campaign does) and print what they exercise
};

CLI::App* add_gen_command(CLI::App& app, GenOptions& options);
int run_gen(const GenOptions& options, std::ostream& out, std::ostream& err);

}  // namespace shardfuzz::app
