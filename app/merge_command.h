// `shardfuzz merge DIR... --out OUT`: unites the output folders of one campaign's shards (`fuzz
// --shard I/N` on N machines) into OUT: reproducers, one campaign state and the findings databases
// (fuzz/campaign/merge.h); prints and reports the whole as one campaign.
#pragma once

#include "app/ci_reports.h"

#include <CLI/App.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace shardfuzz::app {

struct MergeOptions {
  std::vector<std::string> dirs;
  std::string out = "findings";
  CiReportFlags reports;
};

CLI::App* add_merge_command(CLI::App& app, MergeOptions& options);
int run_merge(const MergeOptions& options, std::ostream& out, std::ostream& err);

}  // namespace shardfuzz::app
