// `shardfuzz conform`: replays recorded PyTorch FSDP2 traces on the native runtime and reports the
// first divergence of each — the differential check that keeps the runtime's scheduler honest.
#pragma once

#include <CLI/App.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace shardfuzz::app {

struct ConformOptions {
  std::string traces_dir;  // empty: default_traces_dir()
  // --emit DIR: instead of replaying, write `cases` generated scenarios as torch reproducers
  // (case-K.py): standalone programs whose --json output --traces replays.
  std::string emit_dir;
  int cases = 200;
  uint64_t seed = 1;
  int world = 1;
  std::string profile = "torch-2.11";
  // --torch-python PY: emit (the --cases generated scenarios, or --scenario FILE --repeat K times),
  // record them on PyTorch through the torch backend (PY runs its worker), replay the recordings,
  // with the per-scenario time of each side.
  std::string torch_python;
  std::vector<std::string> scenario_files;
  int repeat = 1;
};

// The project's recorded traces: tests/conformance/recorded under the current directory when it
// exists (a checkout), else in the source tree this binary was built from; "" when neither exists.
std::string default_traces_dir();

// Registers the subcommand; its options land in `options`.
CLI::App* add_conform_command(CLI::App& app, ConformOptions& options);

// Replays every *.json trace; returns kExitOk, kExitFindings or kExitUsage.
int run_conform(const ConformOptions& options, std::ostream& out, std::ostream& err);

}  // namespace shardfuzz::app
