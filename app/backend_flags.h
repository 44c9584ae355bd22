// --backend and its options, shared by run, fuzz, shrink and replay.
#pragma once

#include "harness/backends/registry/registry.h"

#include <CLI/App.hpp>

#include <memory>
#include <optional>

namespace shardfuzz::app {

struct BackendFlags {
  std::string backend = "threads";
  std::string torch_python = "python3";
  bool cpu = false;
  int deadline_s = 120;
  bool no_recovery = false;
  bool unscheduled = false;
  std::string device = "cpu";
  int nproc = 0;
  bool join = false;
};

void add_backend_flags(CLI::App* cmd, BackendFlags& flags);
// The embedded default (threads on the CPU, recovery on): commands run it without a Backend
// object, which is what lets a campaign isolate each case in a forked child.
bool is_embedded_default(const BackendFlags& flags);
// Throws std::invalid_argument naming the flag.
std::unique_ptr<harness::Backend> make_backend(const BackendFlags& flags);
// --join: every rank of the external launch runs the same command line. Rank 0 goes on to run it
// (nullopt, with nproc set to WORLD_SIZE); any other rank serves its rank here until rank 0 stops
// the launch, and gets the process's exit code. Throws std::invalid_argument naming the flag or
// the environment variable.
std::optional<int> serve_unless_rank0_of_joined_launch(BackendFlags& flags);

}  // namespace shardfuzz::app
