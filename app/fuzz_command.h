// `shardfuzz fuzz`: a campaign on the threads backend; on a failure it shrinks, writes the minimal
// reproducer into --out, prints the command that replays it and exits 1.
#pragma once

#include "fuzz/campaign/campaign.h"
#include "app/backend_flags.h"
#include "app/ci_reports.h"
#include "app/differential_setup.h"

#include <CLI/App.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace shardfuzz::app {

struct FuzzOptions {
  std::string profile;
  std::string time;  // "60s", "5m", "90"
  int cases = 0;
  uint64_t seed = 1;
  int world = 0;
  int max_world = 8;
  std::string out = "findings";
  bool keep_going = false;
  bool coverage_guided = false;  // fuzz/campaign/guidance.h; needs -DSHARDFUZZ_COVERAGE=ON
  std::string corpus;            // "": OUT/corpus
  bool faults = false;
  std::vector<std::string> fault_kinds;
  int recoverable_faults = 5;  // percent of fault-free cases given one recoverable oom
  int seeded_schedules = 50;   // percent of multi-rank cases run under a seeded schedule
  std::string until_row;
  int shrink_steps = 300;
  double shrink_seconds = 120;
  BackendFlags backend;
  bool no_isolation = false;
  std::string case_timeout = "60s";
  int case_memory_mb = 4096;
  std::string resume;  // a campaign's --out folder
  int jobs = 0;        // 0: the cores available (fuzz/campaign/jobs.h)
  int shrink_workers = 0;  // 0: the jobs when stopping at the first finding, else 1 (fuzz/campaign/case_pool.h)
  std::string shard;   // "I/N": this process's share of a fleet's campaign
  std::string findings_db;  // "": OUT/findings.db
  CiReportFlags reports;
  DifferentialFlags differential;
};

CLI::App* add_fuzz_command(CLI::App& app, FuzzOptions& options);
int run_fuzz(const FuzzOptions& options, const std::string& command_line, std::ostream& out, std::ostream& err);

// "60s" -> 60, "5m" -> 300, "1h" -> 3600, "90" -> 90; throws std::invalid_argument naming the value.
double parse_duration_seconds(const std::string& text, const std::string& flag = "--time");

}  // namespace shardfuzz::app
