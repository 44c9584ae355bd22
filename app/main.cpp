// The `shardfuzz` command line: one subcommand per user task, each in app/NAME_command.*.
// Parsing and exit codes live here; the work lives in the subcommands.
#include "app/conform_command.h"
#include "app/exit_codes.h"
#include "app/export_command.h"
#include "app/fuzz_command.h"
#include "app/gen_command.h"
#include "app/shrink_command.h"
#include "app/replay_command.h"
#include "app/run_command.h"
#include "harness/process/rank_process.h"
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

}  // namespace

int main(int argc, char** argv) {
  using namespace shardfuzz::app;
  // OpenBLAS's pthread build (the fast BLAS CI installs) starts its thread pool as it loads, before
  // main: once, start again with one BLAS thread (docs/runtime.md, The BLAS behind the rank threads).
  if (shardfuzz::comm::blas_thread_pool_started() && !std::getenv("OPENBLAS_NUM_THREADS")) {
    ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
    ::execv("/proc/self/exe", argv);  // only returns on failure: go on with the pool
  }
  for (int s : {SIGSEGV, SIGBUS, SIGABRT}) std::signal(s, report_crash);

  CLI::App app{"shardfuzz: fault-injection and stress testing for sharded (FSDP-style) training.",
               "shardfuzz"};
  app.set_version_flag("--version", std::string("shardfuzz ") + SHARDFUZZ_VERSION);
  app.require_subcommand(1);
  app.footer(kExitCodesHelp);

  ConformOptions conform;
  CLI::App* conform_cmd = add_conform_command(app, conform);
  RunCommandOptions run;
  CLI::App* run_cmd = add_run_command(app, run);
  ReplayOptions replay;
  CLI::App* replay_cmd = add_replay_command(app, replay);
  FuzzOptions fuzz;
  CLI::App* fuzz_cmd = add_fuzz_command(app, fuzz);
  ShrinkOptions shrink;
  CLI::App* shrink_cmd = add_shrink_command(app, shrink);
  GenOptions gen;
  CLI::App* gen_cmd = add_gen_command(app, gen);
  ExportOptions export_options;
  CLI::App* export_cmd = add_export_command(app, export_options);
  // A rank process of --backend process/nccl, started by the launcher (or torchrun) with RANK,
  // WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT set; not for direct use (hidden).
  CLI::App* rank_worker_cmd = app.add_subcommand("rank-worker", "serve one rank of --backend process or nccl");
  rank_worker_cmd->group("");
  std::string command_line = "shardfuzz";
  for (int i = 1; i < argc; ++i) command_line += std::string(" ") + argv[i];

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with exit code 0; everything else is a usage error.
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }

  try {
    if (rank_worker_cmd->parsed()) {
      g_crash_head = "shardfuzz rank-worker: this rank process ended (";
      return shardfuzz::harness::process::serve_rank(shardfuzz::harness::process::rank_env_from_environment());
    }
    BackendFlags* flags = run_cmd->parsed()      ? &run.backend
                          : replay_cmd->parsed() ? &replay.backend
                          : fuzz_cmd->parsed()   ? &fuzz.backend
                          : shrink_cmd->parsed() ? &shrink.backend
                                                 : nullptr;
    if (flags && flags->join) {
      g_crash_head = "shardfuzz --join: this rank's process ended (";
      if (const auto served = serve_unless_rank0_of_joined_launch(*flags)) return *served;
    }
    if (conform_cmd->parsed()) return run_conform(conform, std::cout, std::cerr);
    if (run_cmd->parsed()) return run_run(run, std::cout, std::cerr);
    if (replay_cmd->parsed()) return run_replay(replay, std::cout, std::cerr);
    if (fuzz_cmd->parsed()) return run_fuzz(fuzz, command_line, std::cout, std::cerr);
    if (shrink_cmd->parsed()) return run_shrink(shrink, command_line, std::cout, std::cerr);
    if (gen_cmd->parsed()) return run_gen(gen, std::cout, std::cerr);
    if (export_cmd->parsed()) return run_export(export_options, std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "shardfuzz: " << e.what() << "\n";
    return kExitUsage;
  }
  return kExitUsage;  // unreachable while require_subcommand(1) holds
}
