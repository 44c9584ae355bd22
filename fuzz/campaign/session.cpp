// The session's clock and saved state, and its progress line.
#include "fuzz/campaign/session.h"

#include <algorithm>
#include <cstdio>

namespace shardfuzz::fuzz {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

CampaignState initial_state(const CampaignOptions& o, const std::string& backend) {
  CampaignState st;
  st.plan = o;  // the plan part of the options
  st.backend = backend;
  return st;
}

}  // namespace

Session::Session(const CampaignOptions& options, const std::string& backend, std::ostream& out)
    : plan_(options), out_dir_(options.out_dir),
      state_(options.resume ? *options.resume : initial_state(options, backend)) {
  if (options.resume) {
    ++state_.sessions;
    const int stale = remove_stale_temporaries(out_dir_);
    out << "fuzz: resuming " << campaign_state_path(out_dir_) << " at case " << state_.next_case << " ("
        << state_.findings.size() << " finding(s) so far, " << static_cast<int>(state_.elapsed_seconds) << " s spent"
        << (stale ? ", " + std::to_string(stale) + " stale temporary file(s) removed" : "") << ")\n" << std::flush;
  }
  earlier_findings_ = findings();
  spent_before_ = state_.elapsed_seconds;
  save();
}

double Session::elapsed() const { return spent_before_ + session_seconds(); }

double Session::session_seconds() const { return seconds_since(t0_); }

bool Session::over(int k) const {
  return (plan_.cases && k >= *plan_.cases) || (plan_.seconds && elapsed() >= *plan_.seconds);
}

void Session::on_finding(const Finding& f) { state_.findings.push_back({f.case_index, f.case_seed, f.property, f.path, f.zoo}); }

void Session::on_case(const CaseDone& c) {
  state_.next_case = c.index + 1;
  save();
}

void Session::on_end(CampaignResult& result) {
  state_.finished = true;  // by its own limits or its first finding; a killed campaign never gets here
  save();
  result.cases_run = cases_done();
  result.earlier_findings = earlier_findings_;
  result.elapsed_seconds = session_seconds();
}

void Session::save() {
  state_.elapsed_seconds = elapsed();
  state_.cases_run = cases_done();
  save_campaign_state(out_dir_, state_);
}

ProgressLine::ProgressLine(const CampaignPlan& plan, const Session& session, std::ostream& out)
    : plan_(plan), session_(session), line_(out, false), cases_at_start_(session.cases_done()) {}

void ProgressLine::on_case(const CaseDone& c) {
  if (!c.check.property) print(false);
}

void ProgressLine::print(bool final) {
  const double t = session_.session_seconds();
  if (!line_.due(t, final)) return;
  const int done = session_.cases_done();
  const double rate = t > 0 ? (done - cases_at_start_) / t : 0.0;
  // Time left: by the clock when --time is set, else estimated from the rate for --cases.
  double left = plan_.seconds ? std::max(0.0, *plan_.seconds - session_.elapsed()) : -1;
  if (plan_.cases && rate > 0) {
    const double by_cases = std::max(0, plan_.shard_cases_before(*plan_.cases) - done) / rate;
    left = left < 0 ? by_cases : std::min(left, by_cases);
  }
  char line[256];
  std::snprintf(line, sizeof line, "fuzz: %d cases, %.1f/s, %d finding(s)%s", done, rate, session_.findings(),
                left >= 0 && !final ? (", " + std::to_string(static_cast<int>(left)) + " s left").c_str() : "");
  line_.print(t, line, final);
}

}  // namespace shardfuzz::fuzz
