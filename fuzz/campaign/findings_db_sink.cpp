// Recording a campaign's findings, and replaying the known ones it did not see.
#include "fuzz/campaign/findings_db_sink.h"

#include "fuzz/findings/signature.h"
#include "harness/files/read_file.h"
#include "harness/reproducer.h"
#include "harness/scenario/scenario_json.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace shardfuzz::fuzz {
namespace {

harness::CampaignReport::Known known(const findings::FindingRow& row) {
  return {row.signature, row.property, row.zoo, row.first_seen, row.last_seen, row.reproducer_path, row.count};
}

std::vector<harness::CampaignReport::Known> known(const std::vector<findings::FindingRow>& rows) {
  std::vector<harness::CampaignReport::Known> out;
  for (const auto& r : rows) out.push_back(known(r));
  return out;
}

}  // namespace

std::string findings_db_path(const CampaignPlan& plan, const std::string& out_dir) {
  return plan.findings_db.empty() ? out_dir + "/" + kFindingsDbFile : plan.findings_db;
}

CampaignFindingsDb::CampaignFindingsDb(const CampaignOptions& o, const std::string& torch_version, CaseRunner* replay_on)
    : db_(std::make_unique<findings::FindingsDb>(findings_db_path(o, o.out_dir))),
      whole_campaign_(o.shard_count == 1 && o.findings_run == 0),
      replay_on_(replay_on),
      torch_version_(torch_version) {
  if (o.findings_run > 0) {
    run_ = o.findings_run;
    owns_run_ = false;
    return;
  }
  const std::string label = o.command.empty() ? "fuzz --seed " + std::to_string(o.seed) : o.command;
  run_ = db_->begin_run(label, torch_version, o.gen.profile.empty() ? "drawn" : o.gen.profile);
}

void CampaignFindingsDb::record(const Finding& f) {
  findings::FindingInput in;
  in.property = f.property;
  in.zoo = f.zoo;
  in.shape = findings::structural_shape(f.minimal);
  in.torch_version = torch_version_;
  in.profile = f.minimal.profile.name;
  in.reproducer_json = harness::read_file_or_empty(f.path);
  in.reproducer_path = f.path;
  in.reproducer_size = static_cast<int64_t>(harness::to_json(f.minimal).dump().size());
  db_->record(run_, in);
}

void CampaignFindingsDb::on_end(CampaignResult& result) {
  if (replay_on_ && whole_campaign_) result.night = close(*replay_on_);
}

harness::CampaignReport::Night CampaignFindingsDb::close(CaseRunner& runner) {
  const auto still_fails = [&](const findings::FindingRow& row) -> std::optional<bool> {
    const harness::Reproducer r = harness::reproducer_from_json(nlohmann::json::parse(row.reproducer));
    const CaseCheck c = runner.check(r.scenario);
    return c.property.has_value() && *c.property == row.property;
  };
  const findings::FindingsDb::Summary s = owns_run_ ? db_->close_run(run_, still_fails) : db_->summary_of(run_);
  if (owns_run_) db_->finish_run(run_);
  return {db_->path(), known(s.fresh), known(s.still_failing), known(s.fixed), known(s.not_replayed)};
}

}  // namespace shardfuzz::fuzz
