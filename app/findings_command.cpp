// `shardfuzz findings`.
#include "app/findings_command.h"

#include "app/exit_codes.h"
#include "fuzz/findings/findings_db.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <vector>

namespace shardfuzz::app {
namespace {

using fuzz::findings::FindingRow;

nlohmann::json to_json(const FindingRow& r) {
  nlohmann::json j = {{"signature", r.signature},
                      {"property", r.property},
                      {"zoo", r.zoo},
                      {"shape", r.shape},
                      {"status", fuzz::findings::status_name(r.status)},
                      {"count", r.count},
                      {"first_seen", r.first_seen},
                      {"last_seen", r.last_seen},
                      {"first_run", r.first_run},
                      {"last_run", r.last_run},
                      {"fixed_run", r.fixed_run ? nlohmann::json(*r.fixed_run) : nlohmann::json()},
                      {"torch_version", r.torch_version},
                      {"profile", r.profile},
                      {"reproducer_path", r.reproducer_path},
                      {"reproducer_size", r.reproducer_size}};
  // The reproducer as JSON when it is (it always is when a campaign recorded it), else its text.
  j["reproducer"] = nlohmann::json::parse(r.reproducer, nullptr, false);
  if (j["reproducer"].is_discarded()) j["reproducer"] = r.reproducer;
  return j;
}

void print_table(const std::vector<FindingRow>& rows, std::ostream& out) {
  using Row = std::array<std::string, 6>;
  std::vector<Row> table = {{"STATUS", "COUNT", "FIRST SEEN", "LAST SEEN", "SIGNATURE (property|zoo|shape)", "REPRODUCER"}};
  for (const FindingRow& r : rows)
    table.push_back({fuzz::findings::status_name(r.status), std::to_string(r.count), r.first_seen, r.last_seen,
                     r.signature, r.reproducer_path});
  std::array<std::size_t, 6> width{};
  for (const Row& row : table)
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  for (const Row& row : table) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c)
      line += row[c] + (c + 1 < row.size() ? std::string(width[c] - row[c].size() + 2, ' ') : "");
    out << line << "\n";
  }
}

}  // namespace

CLI::App* add_findings_command(CLI::App& app, FindingsOptions& o) {
  CLI::App* cmd = app.add_subcommand("findings", "List the findings database: every finding of every campaign that "
                                                 "recorded into it, open or fixed, the most recently seen first");
  cmd->add_option("--db", o.db, "the findings database")->capture_default_str();
  cmd->add_flag("--json", o.json, "print a JSON array (every column, the reproducer included) instead of a table");
  cmd->add_option("--status", o.status, "which findings")->check(CLI::IsMember({"open", "fixed", "all"}))->capture_default_str();
  return cmd;
}

int run_findings(const FindingsOptions& o, std::ostream& out, std::ostream& err) {
  if (o.status != "open" && o.status != "fixed" && o.status != "all") {
    err << "shardfuzz findings: --status \"" << o.status << "\" is none of open, fixed, all\n";
    return kExitUsage;
  }
  std::vector<FindingRow> all;
  try {
    all = fuzz::findings::FindingsDb(o.db, fuzz::findings::FindingsDb::Access::ReadOnly).list();
  } catch (const std::exception& e) {
    err << "shardfuzz findings: " << e.what() << "\n";
    return kExitUsage;
  }
  std::vector<FindingRow> shown;
  for (const FindingRow& r : all)
    if (o.status == "all" || o.status == fuzz::findings::status_name(r.status)) shown.push_back(r);
  if (o.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const FindingRow& r : shown) j.push_back(to_json(r));
    out << j.dump(2) << "\n";
    return kExitOk;
  }
  const auto open = std::count_if(all.begin(), all.end(),
                                  [](const FindingRow& r) { return r.status == fuzz::findings::FindingStatus::Open; });
  if (!shown.empty()) print_table(shown, out);
  out << "findings: " << shown.size() << (o.status == "all" ? "" : " " + o.status) << " shown; " << o.db << " holds "
      << all.size() << " (" << open << " open, " << all.size() - open << " fixed)\n";
  return kExitOk;
}

}  // namespace shardfuzz::app
