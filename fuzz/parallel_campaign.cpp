// The --jobs parent: fork the shards, watch their saved states, stop them past the first finding,
// merge.
#include "fuzz/parallel_campaign.h"

#include "fuzz/campaign_findings_db.h"
#include "fuzz/campaign_merge.h"
#include "harness/files/write_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
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

// The write end of the parent's wake-up pipe, in a shard (-1 elsewhere).
int g_wake_parent_fd = -1;

// The parent's wake-up pipe's write end, for its SIGCHLD handler (-1 when none is installed).
int g_sigchld_wake_fd = -1;

void on_sigchld(int) {
  const int saved = errno;
  const char byte = 2;
  [[maybe_unused]] const ssize_t n = ::write(g_sigchld_wake_fd, &byte, 1);
  errno = saved;
}

// The parent's wake-up pipe: a shard writes a byte after its claim and as it ends, and a shard's
// exit (SIGCHLD) writes one too, since a large process takes tens of milliseconds to go after its
// last byte.
class WakeUps {
 public:
  WakeUps() {
    if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
      fds_[0] = fds_[1] = -1;  // then the parent only looks every period
      return;
    }
    g_sigchld_wake_fd = fds_[1];
    struct sigaction sa {};
    sa.sa_handler = on_sigchld;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    installed_ = ::sigaction(SIGCHLD, &sa, &previous_) == 0;
  }
  ~WakeUps() {
    if (installed_) ::sigaction(SIGCHLD, &previous_, nullptr);
    g_sigchld_wake_fd = -1;
    for (int fd : fds_)
      if (fd >= 0) ::close(fd);
  }
  WakeUps(const WakeUps&) = delete;
  WakeUps& operator=(const WakeUps&) = delete;
  int write_end() const { return fds_[1]; }
  // In a shard just forked: SIGCHLD as it was (the shard's own workers wake nobody).
  void forget_in_child() const {
    if (installed_) ::sigaction(SIGCHLD, &previous_, nullptr);
  }
  // Waits until a shard writes or ends, or `period` passes, and empties the pipe.
  void wait(std::chrono::milliseconds period) {
    if (fds_[0] < 0) return std::this_thread::sleep_for(period);
    pollfd p{fds_[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(period.count())) <= 0) return;
    char buf[64];
    while (::read(fds_[0], buf, sizeof buf) > 0) {
    }
  }

 private:
  int fds_[2] = {-1, -1};
  bool installed_ = false;
  struct sigaction previous_ {};
};

struct Shard {
  int index = 0;
  std::string dir;
  pid_t pid = -1;
  enum class Health { Running, Finished, Died } health = Health::Running;
  std::string death;  // how it died
  int cases = 0;      // done so far, from its saved state
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

// Runs the shard in a child process writing its log into its folder; the child's pid.
pid_t start_shard(const CampaignOptions& options, const WakeUps& wake_ups) {
  std::filesystem::create_directories(options.out_dir);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fuzz --jobs: fork failed for " + options.out_dir);
  if (pid > 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // the parent killed: so are its shards
  wake_ups.forget_in_child();
  g_wake_parent_fd = wake_ups.write_end();
  int code = 0;
  {
    std::ofstream log(options.out_dir + "/fuzz.log", std::ios::app);
    try {
      const CampaignResult r = run_campaign(options, log);
      code = r.findings.empty() && r.earlier_findings == 0 ? 0 : 1;
    } catch (const std::exception& e) {
      log << "fuzz: shard failed: " << e.what() << "\n";
      code = 3;
    }
  }
  wake_parallel_parent();
  std::_Exit(code);
}

// The shard's exit, if it has exited.
void reap(Shard& s) {
  int status = 0;
  if (s.health != Shard::Health::Running || ::waitpid(s.pid, &status, WNOHANG) != s.pid) return;
  if (WIFEXITED(status) && WEXITSTATUS(status) <= 1) {
    s.health = Shard::Health::Finished;
    return;
  }
  s.health = Shard::Health::Died;
  s.death = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                : "exited with " + std::to_string(WEXITSTATUS(status)) + " (its fuzz.log says why)";
}

// Reads the shard's saved state (written atomically after every case).
void poll(Shard& s) {
  try {
    const CampaignState st = load_campaign_state(s.dir);
    s.cases = st.cases_run >= 0 ? st.cases_run : st.plan.shard_cases_before(st.next_case);
    s.findings = static_cast<int>(st.findings.size());
    for (const auto& f : st.findings)
      if (s.first_finding < 0 || f.case_index < s.first_finding) s.first_finding = f.case_index;
  } catch (const std::exception&) {
    // not written yet
  }
  std::ifstream claim(s.dir + "/" + kFailingCaseFile);
  int claimed = -1;
  if (claim >> claimed && (s.first_finding < 0 || claimed < s.first_finding)) s.first_finding = claimed;
}

class Progress {
 public:
  Progress(const CampaignOptions& o, std::ostream& out) : o_(o), out_(out), tty_(::isatty(STDOUT_FILENO) != 0) {}
  void print(const std::vector<Shard>& shards, bool final) {
    const double t = std::chrono::duration<double>(Clock::now() - t0_).count();
    if (!final && t - last_ < (tty_ ? 0.2 : 5.0)) return;
    last_ = t;
    int cases = 0, findings = 0, running = 0, died = 0;
    for (const Shard& s : shards) {
      cases += s.cases;
      findings += s.findings;
      running += s.health == Shard::Health::Running;
      died += s.health == Shard::Health::Died;
    }
    char line[320];
    const std::string left = o_.seconds && !final ? ", " + std::to_string(static_cast<int>(std::max(0.0, *o_.seconds - t))) + " s left" : "";
    std::snprintf(line, sizeof line, "fuzz: %d cases, %.1f/s, %d finding(s)%s; %d jobs: %d running, %d done, %d died",
                  cases, t > 0 ? (cases - cases_at_start_) / t : 0.0, findings, left.c_str(), static_cast<int>(shards.size()),
                  running, static_cast<int>(shards.size()) - running - died, died);
    out_ << (tty_ && !final ? "\r" : "") << line << (tty_ && !final ? "" : "\n") << std::flush;
  }
  void set_start(int cases) { cases_at_start_ = cases; }
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }

 private:
  const CampaignOptions& o_;
  std::ostream& out_;
  const bool tty_;
  const Clock::time_point t0_ = Clock::now();
  double last_ = -1e9;
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

CampaignResult merged_result(const CampaignOptions& o, const std::vector<Shard>& shards, double elapsed, std::ostream& out) {
  std::vector<std::string> dirs;
  for (const Shard& s : shards)
    if (std::filesystem::exists(campaign_state_path(s.dir))) dirs.push_back(s.dir);
  MergedCampaign m = merge_campaigns(dirs, o.out_dir, {o.shard_index, o.shard_count});
  m.state.plan.jobs = o.jobs;
  m.state.plan.findings_run = 0;
  m.state.plan.findings_db = o.findings_db == findings_db_path(CampaignPlan{}, o.out_dir) ? "" : o.findings_db;
  m.state.plan.command = o.command;
  m.state.elapsed_seconds = elapsed + (o.resume ? o.resume->elapsed_seconds : 0);
  m.state.sessions = o.resume ? o.resume->sessions + 1 : 1;
  for (const Shard& s : shards)
    if (s.health == Shard::Health::Died) m.state.finished = false;
  save_campaign_state(o.out_dir, m.state);
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

}  // namespace

void wake_parallel_parent() {
  if (g_wake_parent_fd < 0) return;
  const char byte = 1;
  [[maybe_unused]] const ssize_t n = ::write(g_wake_parent_fd, &byte, 1);  // a full pipe wakes it already
}

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
  if (!options.resume) {
    std::filesystem::remove(options.out_dir + "/.stop");
    for (int i = 0; i < options.jobs; ++i) std::filesystem::remove(job_dir(options.out_dir, i) + "/" + kFailingCaseFile);
  }
  {
    CampaignState st;  // the parent's own state first: `--resume OUT` must know it was a --jobs campaign
    st.plan = options;
    if (options.resume) st = *options.resume;
    save_campaign_state(options.out_dir, st);
  }
  WakeUps wake_ups;
  std::vector<Shard> shards;
  for (int i = 0; i < options.jobs; ++i) {
    Shard s;
    s.index = i;
    s.dir = job_dir(options.out_dir, i);
    if (const auto o = options_of_shard(options, i)) s.pid = start_shard(*o, wake_ups);
    else s.health = Shard::Health::Finished;
    shards.push_back(std::move(s));
  }
  out << "fuzz: " << options.jobs << " jobs, each a shard of the cases (k % " << options.jobs * options.shard_count
      << "), writing into " << options.out_dir << "/jobs/\n" << std::flush;
  Progress progress(options, out);
  for (Shard& s : shards) poll(s);
  {
    int before = 0;
    for (const Shard& s : shards) before += s.cases;
    progress.set_start(before);
  }
  int stop_written = -1;
  for (;;) {
    bool running = false;
    for (Shard& s : shards) {
      reap(s);
      poll(s);
      running = running || s.health == Shard::Health::Running;
    }
    write_stop(options, shards, stop_written);
    if (!running) break;
    progress.print(shards, false);
    wake_ups.wait(std::chrono::milliseconds(100));
  }
  progress.print(shards, true);
  CampaignResult r = merged_result(options, shards, progress.elapsed(), out);
  CaseRunner runner(*options.backend, options.isolation);
  r.night = db.close(runner);
  return r;
}

}  // namespace shardfuzz::fuzz
