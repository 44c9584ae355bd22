// One session of a campaign: its clock (time spent in earlier sessions included) and its saved
// state, written after every case (so --resume continues a killed campaign). A sink: a finding
// joins the state with its case marked done, in one save (a campaign killed between the two would
// resume past the case without the finding).
#pragma once

#include "fuzz/campaign/sink.h"
#include "fuzz/campaign/status_line.h"

#include <chrono>
#include <ostream>
#include <string>

namespace shardfuzz::fuzz {

class Session : public CampaignSink {
 public:
  // A fresh state from the options' plan, or their resume's (its sessions counted, stale temporary
  // files removed and said on `out`); saved at once.
  Session(const CampaignOptions& options, const std::string& backend, std::ostream& out);

  int next_case() const { return state_.next_case; }
  double elapsed() const;          // over all sessions
  double session_seconds() const;  // this session's
  int cases_done() const { return plan_.shard_cases_before(state_.next_case); }  // this shard's, over all sessions
  int findings() const { return static_cast<int>(state_.findings.size()); }     // over all sessions
  int earlier_findings() const { return earlier_findings_; }
  // Whether case k is past the plan's --cases or --time.
  bool over(int k) const;

  void on_finding(const Finding& f) override;
  void on_case(const CaseDone& c) override;
  void on_end(CampaignResult& result) override;

 private:
  void save();

  const CampaignPlan& plan_;
  std::string out_dir_;
  CampaignState state_;
  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  double spent_before_ = 0;
  int earlier_findings_ = 0;
};

// The campaign's progress line (status_line.h): cases, rate, findings and time left.
class ProgressLine : public CampaignSink {
 public:
  ProgressLine(const CampaignPlan& plan, const Session& session, std::ostream& out);
  void on_case(const CaseDone& c) override;
  void on_end(CampaignResult&) override { print(true); }

 private:
  void print(bool final);
  const CampaignPlan& plan_;
  const Session& session_;
  StatusLine line_;
  int cases_at_start_ = 0;
};

}  // namespace shardfuzz::fuzz
