// The `shardfuzz` command line: one subcommand per user task, each in app/NAME_command.*, listed
// in one command table. Parsing and exit codes live here; the work lives in the subcommands.
#include "app/command.h"
#include "app/conform_command.h"
#include "app/exit_codes.h"
#include "app/export_command.h"
#include "app/findings_command.h"
#include "app/fuzz_command.h"
#include "app/gen_command.h"
#include "app/import_command.h"
#include "app/merge_command.h"
#include "app/shrink_command.h"
#include "app/replay_command.h"
#include "app/run_command.h"
#include "harness/backends/process/rank_process.h"
#include "harness/isolation/child_outcome.h"
#include "runtime/comm/blas_threads.h"

#include <CLI/App.hpp>
#include <CLI/Config.hpp>
#include <CLI/Formatter.hpp>

#include <csignal>
#include <cstdlib>
#include <exception>
#include <execinfo.h>
#include <iostream>
#include <unistd.h>
#include <vector>

#ifndef SHARDFUZZ_VERSION
#define SHARDFUZZ_VERSION "unknown"
#endif

namespace {

// A crash of the harness itself says where (addresses resolve with addr2line -e shardfuzz), then
// dies of the same signal, so callers and CI still see it.
// Who crashed: the harness, or one rank process of --backend process/nccl (where an injected abort
// is a planned fault, reported by its launcher).
const char* g_crash_head = "shardfuzz: the harness itself crashed (";

void report_crash(int signal) {
  const char* what = signal == SIGSEGV ? "segmentation fault" : signal == SIGBUS ? "bus error" : "abort";
  const char* head = g_crash_head;
  (void)!::write(STDERR_FILENO, head, std::char_traits<char>::length(head));
  (void)!::write(STDERR_FILENO, what, std::char_traits<char>::length(what));
  (void)!::write(STDERR_FILENO, "); backtrace:\n", 14);
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

using namespace shardfuzz::app;

// Ends the process once a command has returned, without static destructors: LibTorch's unregister
// each of its thousands of kernels one by one, 0.2 s of every command here (a fifth of a short
// hunt). Nothing of ours waits for them: a command's files are written, closed and renamed into
// place, and its databases closed, before it returns.
[[noreturn]] void leave(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}

// A rank process of --backend process/nccl, started by the launcher (or torchrun) with RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT set; not for direct use (hidden).
Command rank_worker_command() {
  Command c;
  c.name = "rank-worker";
  c.add_options = [](CLI::App& app) {
    CLI::App* cmd = app.add_subcommand("rank-worker", "serve one rank of --backend process or nccl");
    cmd->group("");
    return cmd;
  };
  c.run = [](const Invocation&) {
    g_crash_head = "shardfuzz rank-worker: this rank process ended (";
    return shardfuzz::harness::process::serve_rank(shardfuzz::harness::process::rank_env_from_environment());
  };
  return c;
}

// Every subcommand, in the order --help lists them.
std::vector<Command> command_table() {
  return {
      make_command<ConformOptions>("conform", add_conform_command,
                                   [](const auto& o, const Invocation& in) { return run_conform(o, in.out, in.err); }),
      make_command<RunCommandOptions>("run", add_run_command,
                                      [](const auto& o, const Invocation& in) { return run_run(o, in.out, in.err); }),
      make_command<ReplayOptions>("replay", add_replay_command,
                                  [](const auto& o, const Invocation& in) { return run_replay(o, in.out, in.err); }),
      make_command<FuzzOptions>(
          "fuzz", add_fuzz_command,
          [](const auto& o, const Invocation& in) { return run_fuzz(o, in.command_line, in.out, in.err); }),
      make_command<MergeOptions>("merge", add_merge_command,
                                 [](const auto& o, const Invocation& in) { return run_merge(o, in.out, in.err); }),
      make_command<ShrinkOptions>(
          "shrink", add_shrink_command,
          [](const auto& o, const Invocation& in) { return run_shrink(o, in.command_line, in.out, in.err); }),
      make_command<GenOptions>("gen", add_gen_command,
                               [](const auto& o, const Invocation& in) { return run_gen(o, in.out, in.err); }),
      make_command<ImportOptions>("import", add_import_command,
                                  [](const auto& o, const Invocation& in) { return run_import(o, in.out, in.err); }),
      make_command<ExportOptions>("export", add_export_command,
                                  [](const auto& o, const Invocation& in) { return run_export(o, in.out, in.err); }),
      make_command<FindingsOptions>("findings", add_findings_command,
                                    [](const auto& o, const Invocation& in) { return run_findings(o, in.out, in.err); }),
      rank_worker_command(),
  };
}

// Runs the parsed command. Under --join, every rank but rank 0 serves its rank here instead.
int run_command(Command& command, const Invocation& in) {
  if (command.backend && command.backend->join) {
    g_crash_head = "shardfuzz --join: this rank's process ended (";
    if (const auto served = serve_unless_rank0_of_joined_launch(*command.backend)) return *served;
  }
  return command.run(in);
}

}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS's pthread build (the fast BLAS CI installs) starts its thread pool as it loads, before
  // main: stop it (one BLAS thread per call), or, where it cannot be stopped, start again with one
  // BLAS thread, which costs a second start-up (0.7 s here: docs/runtime.md, The BLAS behind the
  // rank threads). Children this process starts inherit the variable.
  if (shardfuzz::comm::blas_thread_pool_started() && !std::getenv("OPENBLAS_NUM_THREADS")) {
    ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
    if (!shardfuzz::comm::stop_blas_thread_pool() || shardfuzz::harness::isolation::thread_count() > 1)
      ::execv("/proc/self/exe", argv);  // only returns on failure: go on with the pool
  }
  for (int s : {SIGSEGV, SIGBUS, SIGABRT}) std::signal(s, report_crash);

  CLI::App app{"shardfuzz: fault-injection and stress testing for sharded (FSDP-style) training.",
               "shardfuzz"};
  app.set_version_flag("--version", std::string("shardfuzz ") + SHARDFUZZ_VERSION);
  app.require_subcommand(1);
  app.footer(kExitCodesHelp);
  std::vector<Command> commands = command_table();
  for (Command& c : commands) c.add_options(app);
  std::string command_line = "shardfuzz";
  for (int i = 1; i < argc; ++i) command_line += std::string(" ") + argv[i];

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with exit code 0; everything else is a usage error.
    const int code = app.exit(e);
    leave(code == 0 ? kExitOk : kExitUsage);
  }

  try {
    for (Command& c : commands)
      if (app.got_subcommand(c.name)) leave(run_command(c, {command_line, std::cout, std::cerr}));
  } catch (const std::exception& e) {
    std::cerr << "shardfuzz: " << e.what() << "\n";
    leave(kExitUsage);
  }
  return kExitUsage;  // unreachable while require_subcommand(1) holds
}
