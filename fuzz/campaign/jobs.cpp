// The --jobs parent: start the shards, watch their saved states, stop them past the first finding,
// merge.
#include "fuzz/campaign/jobs.h"

#include "fuzz/campaign/campaign.h"

#include "fuzz/campaign/findings_db_sink.h"
#include "fuzz/campaign/merge.h"
#include "fuzz/campaign/sink.h"
#include "fuzz/campaign/status_line.h"
#include "harness/files/write_file.h"
#include "harness/subprocess/child.h"
#include "harness/subprocess/exit_status.h"
#include "harness/subprocess/io.h"

#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>
#include <vector>

namespace shardfuzz::fuzz {
namespace {

using Clock = std::chrono::steady_clock;
namespace sp = harness::subprocess;

// The index written in a stop or claim file, or -1.
long index_in(const std::string& file) {
  std::ifstream in(file);
  long k = -1;
  return in >> k ? k : -1;
}

// What the parent injects into a shard's loop: the shard stops before any case past the stop file's
// index (and drops a shrink of one), and claims a failing case before its shrink, waking the parent
// over the shard's pipe so the other shards stop now rather than once the finding is written.
class ShardClaim : public CampaignSink {
 public:
  ShardClaim(std::string stop_file, std::string claim_file, int to_parent)
      : stop_file_(std::move(stop_file)), claim_file_(std::move(claim_file)), to_parent_(to_parent) {}
  bool stops_before(int k) const override {
    if (stop_file_.empty()) return false;
    const long last = index_in(stop_file_);
    return last >= 0 && k > last;
  }
  void on_failing_case(int k) override {
    if (stop_file_.empty()) return;  // --keep-going: nothing stops, nothing to claim
    const long earlier = index_in(claim_file_);
    if (earlier >= 0 && earlier <= k) return;
    harness::write_file_atomically(claim_file_, std::to_string(k) + "\n");
    wake_parent();
  }
  void wake_parent() const { sp::write_all(to_parent_, "!", 1); }  // a full pipe wakes it already

 private:
  std::string stop_file_;
  std::string claim_file_;
  int to_parent_;
};

struct Shard {
  int index = 0;
  std::string dir;
  sp::Child child;
  enum class Health { Running, Finished, Died } health = Health::Running;
  std::string death;       // how it died
  int cases = 0;           // done so far, from its saved state
  int first_finding = -1;  // its lowest failing case index (claimed before its shrink, or written)
  int findings = 0;
};

// Shard i of a --jobs campaign; inside a fleet's shard I of N it is shard I + N * i of N * jobs.
CampaignOptions shard_options(const CampaignOptions& o, int i) {
  CampaignOptions s = o;
  s.shard_index = o.shard_index + o.shard_count * i;
  s.shard_count = o.shard_count * o.jobs;
  s.jobs = 1;
  s.out_dir = job_dir(o.out_dir, i);
  s.stop_file = o.keep_going ? "" : o.out_dir + "/.stop";
  s.resume.reset();
  return s;
}

// What shard i runs: its saved campaign when resuming one that has not finished, else a fresh one;
// nullopt when it finished already.
std::optional<CampaignOptions> options_of_shard(const CampaignOptions& o, int i) {
  const std::string dir = job_dir(o.out_dir, i);
  if (!o.resume || !std::filesystem::exists(campaign_state_path(dir))) return shard_options(o, i);
  const CampaignState st = load_campaign_state(dir);
  if (st.finished) return std::nullopt;
  CampaignOptions s = options_to_resume(st, dir);
  s.backend = o.backend;
  return s;
}

// The shard's process: its campaign with the parent's claim, its log in its folder. Exit 0 clean,
// 1 with findings, 3 when the campaign itself failed.
void shard_main(const CampaignOptions& options, int to_parent) {
  ShardClaim claim(options.stop_file, options.out_dir + "/" + kFailingCaseFile, to_parent);
  int code = 0;
  {
    std::ofstream log(options.out_dir + "/fuzz.log", std::ios::app);
    try {
      const CampaignResult r = run_campaign(options, log, &claim);
      code = r.findings.empty() && r.earlier_findings == 0 ? 0 : 1;
    } catch (const std::exception& e) {
      log << "fuzz: shard failed: " << e.what() << "\n";
      code = 3;
    }
  }
  claim.wake_parent();
  std::fflush(nullptr);
  std::_Exit(code);
}

sp::Child start_shard(const CampaignOptions& options, int i) {
  std::filesystem::create_directories(options.out_dir);
  std::fflush(nullptr);
  sp::SpawnOptions spawn;
  spawn.who = "fuzz --jobs shard " + std::to_string(i);
  spawn.die_with_parent = true;  // the parent killed: so are its shards, and their workers with them
  spawn.from_child = true;       // the shard's wake-ups
  return sp::spawn(spawn, [&](int, int to_parent) { shard_main(options, to_parent); });
}

// The shard's exit, if it has exited.
void reap(Shard& s) {
  if (s.health != Shard::Health::Running) return;
  const std::optional<int> status = s.child.try_reap();
  if (!status) return;
  const sp::ExitStatus exit = sp::ExitStatus::from_wait(*status);
  if (exit.code == 0 || exit.code == 1) {
    s.health = Shard::Health::Finished;
    return;
  }
  s.health = Shard::Health::Died;
  s.death = exit.signalled() ? exit.describe() : exit.describe() + " (its fuzz.log says why)";
}

// Reads the shard's saved state (written atomically after every case) and its claim.
void poll_state(Shard& s) {
  try {
    const CampaignState st = load_campaign_state(s.dir);
    s.cases = st.cases_run >= 0 ? st.cases_run : st.plan.shard_cases_before(st.next_case);
    s.findings = static_cast<int>(st.findings.size());
    for (const auto& f : st.findings)
      if (s.first_finding < 0 || f.case_index < s.first_finding) s.first_finding = f.case_index;
  } catch (const std::exception&) {
    // not written yet
  }
  const long claimed = index_in(s.dir + "/" + kFailingCaseFile);
  if (claimed >= 0 && (s.first_finding < 0 || claimed < s.first_finding)) s.first_finding = static_cast<int>(claimed);
}

// Waits until a running shard writes to its pipe or closes it, or `period` passes; empties the pipes.
void wait_for_shards(std::vector<Shard>& shards, std::chrono::milliseconds period) {
  std::vector<pollfd> fds;
  for (const Shard& s : shards)
    if (s.health == Shard::Health::Running && s.child.from_child() >= 0) fds.push_back({s.child.from_child(), POLLIN, 0});
  if (fds.empty()) return std::this_thread::sleep_for(period);
  if (::poll(fds.data(), fds.size(), static_cast<int>(period.count())) <= 0) return;
  for (const pollfd& p : fds) {
    std::string ignored;
    if (p.revents) sp::drain(p.fd, ignored, 16);
  }
}

class Progress {
 public:
  Progress(const CampaignOptions& o, std::ostream& out) : o_(o), line_(out, true) {}
  void print(const std::vector<Shard>& shards, bool final) {
    const double t = elapsed();
    if (!line_.due(t, final)) return;
    int cases = 0, findings = 0, running = 0, died = 0;
    for (const Shard& s : shards) {
      cases += s.cases;
      findings += s.findings;
      running += s.health == Shard::Health::Running;
      died += s.health == Shard::Health::Died;
    }
    char line[320];
    const std::string left =
        o_.seconds && !final ? ", " + std::to_string(static_cast<int>(std::max(0.0, *o_.seconds - t))) + " s left" : "";
    std::snprintf(line, sizeof line, "fuzz: %d cases, %.1f/s, %d finding(s)%s; %d jobs: %d running, %d done, %d died",
                  cases, t > 0 ? (cases - cases_at_start_) / t : 0.0, findings, left.c_str(),
                  static_cast<int>(shards.size()), running, static_cast<int>(shards.size()) - running - died, died);
    line_.print(t, line, final);
  }
  void set_start(int cases) { cases_at_start_ = cases; }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

 private:
  const CampaignOptions& o_;
  StatusLine line_;
  const Clock::time_point t0_ = Clock::now();
  int cases_at_start_ = 0;
};

// Without --keep-going: the lowest failing case so far, written for the shards to stop past it.
void write_stop(const CampaignOptions& o, const std::vector<Shard>& shards, int& written) {
  if (o.keep_going) return;
  int first = -1;
  for (const Shard& s : shards)
    if (s.first_finding >= 0 && (first < 0 || s.first_finding < first)) first = s.first_finding;
  if (first < 0 || first == written) return;
  harness::write_file_atomically(o.out_dir + "/.stop", std::to_string(first) + "\n");
  written = first;
}

// The merged state, saved as the whole campaign's (a --resume of OUT continues it).
MergedCampaign merge_shards(const CampaignOptions& o, const std::vector<Shard>& shards, double elapsed) {
  std::vector<std::string> dirs;
  for (const Shard& s : shards)
    if (std::filesystem::exists(campaign_state_path(s.dir))) dirs.push_back(s.dir);
  MergedCampaign m = merge_campaigns(dirs, o.out_dir, {o.shard_index, o.shard_count});
  m.state.plan.jobs = o.jobs;
  m.state.plan.findings_run = 0;
  m.state.plan.findings_db = o.findings_db == findings_db_path(CampaignPlan{}, o.out_dir) ? "" : o.findings_db;
  m.state.plan.command = o.command;
  m.state.elapsed_seconds = elapsed + (o.resume ? o.resume->elapsed_seconds : 0);
  m.state.sessions = o.resume ? o.resume->sessions + 1 : 1;  // as prepare() saved it
  for (const Shard& s : shards)
    if (s.health == Shard::Health::Died) m.state.finished = false;
  save_campaign_state(o.out_dir, m.state);
  return m;
}

CampaignResult merged_result(const CampaignOptions& o, const std::vector<Shard>& shards, double elapsed, std::ostream& out) {
  const MergedCampaign m = merge_shards(o, shards, elapsed);
  CampaignResult r;
  r.cases_run = m.cases_run;
  r.cases_this_session = m.cases_run;
  r.elapsed_seconds = elapsed;
  for (std::size_t i = 0; i < m.state.findings.size(); ++i) {
    const CampaignFindingEntry& e = m.state.findings[i];
    Finding f;
    f.property = e.property;
    f.message = m.messages[i];
    f.path = e.path;
    f.zoo = e.zoo;
    f.case_seed = e.case_seed;
    f.case_index = e.case_index;
    const std::string html = e.path.substr(0, e.path.rfind(".json")) + ".html";
    if (std::filesystem::exists(html)) f.report = html;
    out << "fuzz: case " << e.case_index << " fails " << e.property << ": " << f.message << "\nfuzz: bug zoo: " << e.zoo
        << "\nreplay with: shardfuzz run " << e.path << "\n";
    r.findings.push_back(std::move(f));
  }
  for (const Shard& s : shards)
    if (s.health == Shard::Health::Died)
      out << "fuzz: shard " << s.index << " " << s.death << " after " << s.cases << " case(s); `shardfuzz fuzz --resume "
          << o.out_dir << "` continues it (" << s.dir << "/fuzz.log)\n";
  return r;
}

// The parent's own state first: `--resume OUT` must know it was a --jobs campaign. A fresh
// campaign forgets an earlier one's stop and claims.
void prepare(const CampaignOptions& options) {
  if (!options.resume) {
    std::filesystem::remove(options.out_dir + "/.stop");
    for (int i = 0; i < options.jobs; ++i) std::filesystem::remove(job_dir(options.out_dir, i) + "/" + kFailingCaseFile);
  }
  CampaignState st;
  st.plan = options;
  if (options.resume) {
    st = *options.resume;
    ++st.sessions;  // a parent killed again resumes from here: every session counts
  }
  save_campaign_state(options.out_dir, st);
}

std::vector<Shard> start_shards(const CampaignOptions& options) {
  std::vector<Shard> shards(options.jobs);
  for (int i = 0; i < options.jobs; ++i) {
    Shard& s = shards[i];
    s.index = i;
    s.dir = job_dir(options.out_dir, i);
    if (const auto o = options_of_shard(options, i)) s.child = start_shard(*o, i);
    else s.health = Shard::Health::Finished;
  }
  return shards;
}

// Watches the shards until none runs, stopping them past the first finding.
void watch(const CampaignOptions& options, std::vector<Shard>& shards, Progress& progress) {
  int stop_written = -1;
  for (;;) {
    bool running = false;
    for (Shard& s : shards) {
      reap(s);
      poll_state(s);
      running = running || s.health == Shard::Health::Running;
    }
    write_stop(options, shards, stop_written);
    if (!running) break;
    progress.print(shards, false);
    wait_for_shards(shards, std::chrono::milliseconds(100));
  }
  progress.print(shards, true);
}

}  // namespace

std::string job_dir(const std::string& out_dir, int shard) { return out_dir + "/jobs/" + std::to_string(shard); }

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

CampaignResult run_parallel_campaign(const CampaignOptions& asked, std::ostream& out) {
  std::filesystem::create_directories(asked.out_dir);
  // One run of the findings database for the whole campaign; every shard records into it.
  CampaignOptions options = asked;
  options.findings_run = 0;  // the parent's run, new each session (resumed shards keep theirs)
  CampaignFindingsDb db(options, "");
  options.findings_db = findings_db_path(options, options.out_dir);
  options.findings_run = db.run();
  prepare(options);
  std::vector<Shard> shards = start_shards(options);
  out << "fuzz: " << options.jobs << " jobs, each a shard of the cases (k % " << options.jobs * options.shard_count
      << "), writing into " << options.out_dir << "/jobs/\n" << std::flush;
  Progress progress(options, out);
  int before = 0;
  for (Shard& s : shards) poll_state(s), before += s.cases;
  progress.set_start(before);
  watch(options, shards, progress);
  CampaignResult r = merged_result(options, shards, progress.elapsed(), out);
  CaseRunner runner(*options.backend, options.isolation);
  r.night = db.close(runner);
  return r;
}

}  // namespace shardfuzz::fuzz
