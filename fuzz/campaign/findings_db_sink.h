// A campaign's side of the findings database (fuzz/findings/findings_db.h), as a sink: one run per
// campaign (a --jobs campaign's shards record into their parent's run), one sighting per finding
// with its structural signature and reproducer, and at the end of a whole campaign the replay of
// every known open finding it did not see again: one that no longer fails is fixed. What the night
// did to each known finding goes to the summary and JUnit (new, still failing, fixed).
#pragma once

#include "fuzz/campaign/sink.h"
#include "fuzz/findings/findings_db.h"
#include "harness/report/ci_reports.h"

#include <memory>
#include <string>

namespace shardfuzz::fuzz {

// The database a campaign writes: --findings-db, else OUT/findings.db.
std::string findings_db_path(const CampaignPlan& plan, const std::string& out_dir);

class CampaignFindingsDb : public CampaignSink {
 public:
  // Opens (creating) the database and begins this campaign's run, or joins plan.findings_run.
  // Throws std::runtime_error naming the file when it cannot be opened. `replay_on`: what replays
  // the known findings at the end of a whole campaign (nullptr: the owner calls close()).
  CampaignFindingsDb(const CampaignOptions& options, const std::string& torch_version, CaseRunner* replay_on = nullptr);
  int64_t run() const { return run_; }
  // One sighting; a reproducer that cannot be read is recorded without its text.
  void record(const Finding& finding);
  // Ends the run: replays (through `runner`) the open findings it did not see, and classifies.
  harness::CampaignReport::Night close(CaseRunner& runner);

  void on_finding(const Finding& f) override { record(f); }
  // A whole campaign's night (a shard cannot tell: its parent or `merge` sees the whole).
  void on_end(CampaignResult& result) override;

 private:
  std::unique_ptr<findings::FindingsDb> db_;
  int64_t run_ = 0;
  bool owns_run_ = true;
  bool whole_campaign_ = true;
  CaseRunner* replay_on_ = nullptr;
  std::string torch_version_;
};

}  // namespace shardfuzz::fuzz
