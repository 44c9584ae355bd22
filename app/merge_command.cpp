// `shardfuzz merge`.
#include "app/merge_command.h"

#include "app/exit_codes.h"
#include "fuzz/campaign/merge.h"

namespace shardfuzz::app {

CLI::App* add_merge_command(CLI::App& app, MergeOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "merge", "Unite the output folders of one campaign's shards (fuzz --shard I/N) into one: reproducers, state, "
               "findings databases");
  cmd->add_option("dirs", o.dirs, "the shards' --out folders")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--out", o.out, "the merged folder (may be one of the shards' folders)")->capture_default_str();
  add_ci_report_flags(cmd, o.reports);
  return cmd;
}

int run_merge(const MergeOptions& o, std::ostream& out, std::ostream& err) {
  fuzz::MergedCampaign m;
  try {
    m = fuzz::merge_campaigns(o.dirs, o.out);
  } catch (const std::exception& e) {
    err << "shardfuzz merge: " << e.what() << "\n";
    return kExitUsage;
  }
  out << "merge: " << o.dirs.size() << " of " << m.shard_count << " shard(s) of campaign seed " << m.state.plan.seed
      << ": " << m.cases_run << " cases, " << m.state.findings.size() << " finding(s), into " << o.out << "\n";
  const auto list = [](const std::vector<int>& shards) {
    std::string s;
    for (int i : shards) s += (s.empty() ? "" : ", ") + std::to_string(i);
    return s;
  };
  if (!m.shards_missing.empty()) out << "merge: no folder for shard(s) " << list(m.shards_missing) << ": their cases are not in it\n";
  if (!m.shards_unfinished.empty())
    out << "merge: shard(s) " << list(m.shards_unfinished)
        << " did not finish (killed?): `shardfuzz fuzz --resume DIR` continues each, then merge again\n";
  harness::CampaignReport report;
  report.seed = m.state.plan.seed;
  report.out_dir = o.out;
  report.cases_run = m.cases_run;
  report.elapsed_seconds = m.state.elapsed_seconds;
  for (std::size_t i = 0; i < m.state.findings.size(); ++i) {
    const auto& f = m.state.findings[i];
    out << "merge: case " << f.case_index << " fails " << f.property << " (bug zoo: " << f.zoo << "): " << m.messages[i]
        << "\nreplay with: shardfuzz run " << f.path << "\n";
    report.findings.push_back({f.property, m.messages[i], f.path, f.zoo, 0, 0});
  }
  if (!write_ci_reports(o.reports, {harness::campaign_suite(report)}, harness::campaign_summary(report), err))
    return kExitUsage;
  return m.state.findings.empty() ? kExitOk : kExitFindings;
}

}  // namespace shardfuzz::app
