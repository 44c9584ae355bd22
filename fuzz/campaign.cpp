// The campaign loop.
#include "fuzz/campaign.h"
#include "fuzz/case_pool.h"

#include "fuzz/campaign_findings_db.h"
#include "fuzz/coverage/edge_map.h"
#include "fuzz/coverage_guidance.h"
#include "fuzz/parallel_campaign.h"
#include "fuzz/gen/generate.h"
#include "harness/isolation/child_process.h"
#include "harness/properties/property.h"
#include "harness/report/html_report.h"
#include "harness/files/write_file.h"
#include "harness/reproducer.h"
#include "harness/scenario/scenario_features.h"
#include "harness/backends/threads/threads_backend.h"
#include "harness/zoo/blame.h"
#include "runtime/semantics/profile.h"

#include <algorithm>
#include <filesystem>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <unistd.h>

namespace shardfuzz::fuzz {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Whether a parallel campaign's stop file says case k comes after its first finding.
bool stopped_before(const std::string& stop_file, int k) {
  if (stop_file.empty()) return false;
  std::ifstream in(stop_file);
  long last = 0;
  return in >> last && k > last;
}

// Thrown from a shrink step of a --jobs shard whose case another shard's lower failing case has
// overtaken: a campaign of one job would have stopped before it, so its shrink is dropped.
struct CaseOvertaken {};

// A --jobs shard says which case it is about to shrink (before the shrink, which takes seconds),
// so the parent can stop the other shards past it now rather than once the finding is written.
void claim_failing_case(const CampaignOptions& o, int k) {
  if (o.stop_file.empty()) return;
  const std::string claim = o.out_dir + "/" + kFailingCaseFile;
  std::ifstream in(claim);
  long earlier = 0;
  if (in >> earlier && earlier <= k) return;
  harness::write_file_atomically(claim, std::to_string(k) + "\n");
  wake_parallel_parent();
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string describe(const harness::Scenario& s) {
  int nested = 0;
  for (const auto& [path, spec] : s.fully_shard) nested += path.find('.', path.find('.') + 1) != std::string::npos;
  int checkpointed = 0;
  for (const auto& b : s.blocks) checkpointed += b.ac != ac::CheckpointMode::None;
  return std::to_string(s.blocks.size()) + " block(s) (" + std::to_string(checkpointed) + " checkpointed), " +
         std::to_string(s.fully_shard.size()) + " fully_shard group(s) (" + std::to_string(nested) +
         " nested inside blocks), world " + std::to_string(s.world_size) + ", " + std::to_string(s.steps) +
         " step(s), dim " + std::to_string(s.dims.dim);
}

}  // namespace

uint64_t case_seed(uint64_t campaign_seed, int k) { return splitmix64(campaign_seed * 0x100000001b3ULL + static_cast<uint64_t>(k)); }

int case_size(int k) { return 10 + (k % 10) * 10; }  // 10..100, cycling: small cases come often

namespace {

bool blamed_on(const std::vector<harness::zoo::Blame>& blames, const std::string& row) {
  return std::any_of(blames.begin(), blames.end(), [&](const harness::zoo::Blame& b) { return b.row == row; });
}

}  // namespace

std::optional<std::string> first_failing_property(const harness::Scenario& scenario, std::string* message,
                                                  harness::Backend& backend) {
  CaseRunner runner(backend, std::nullopt);
  CaseCheck c = runner.check(scenario);
  if (message) *message = c.message;
  return c.property;
}

std::string write_reproducer(const harness::Scenario& minimal, const std::string& property, const std::string& message,
                             const std::string& dir, const std::string& found_by, const std::string& zoo,
                             CaseRunner* runner, const nlohmann::json& differential, CasePool* pool) {
  harness::Reproducer r;
  r.scenario = minimal;
  // A zoo row names the file "zoo-ROW-..."; a differential finding's class names it itself
  // ("torch-changed-matches_torch-...").
  const std::string prefix = zoo.empty() || zoo == "unattributed" ? ""
                             : differential.is_null()                ? "zoo-" + zoo + "-"
                                                                     : zoo + "-";
  r.name = prefix + property + "-" + minimal.profile.name + "-" + std::to_string(minimal.seed % 1000000);
  std::replace(r.name.begin(), r.name.end(), '+', '_');
  // Two findings can share those digits (mutants of one corpus scenario keep its seed): the later
  // one takes a suffix instead of overwriting the earlier reproducer.
  const std::string base = r.name;
  for (int n = 2; std::filesystem::exists(dir + "/" + r.name + ".json"); ++n) r.name = base + "-" + std::to_string(n);
  r.scenario.name = r.name;
  r.found_by = found_by;
  r.message = message;
  r.zoo = zoo;
  r.differential = differential;
  std::vector<std::string> profiles = semantics::Profile::names();
  if (std::find(profiles.begin(), profiles.end(), minimal.profile.name) == profiles.end())
    profiles.push_back(minimal.profile.name);
  if (pool) {
    const std::vector<std::string> verdicts = pool->verdicts_under(minimal, profiles);
    for (std::size_t i = 0; i < profiles.size(); ++i) r.expected[profiles[i]] = verdicts[i];
  } else {
    for (const auto& profile : profiles)
      r.expected[profile] = runner ? runner->verdict_under(minimal, profile) : harness::verdict_under(minimal, profile);
  }
  const std::string path = dir + "/" + r.name + ".json";
  harness::write_file_atomically(path, harness::to_json(r).dump(2) + "\n");
  return path;
}

CampaignOptions options_to_resume(const CampaignState& st, const std::string& out_dir) {
  CampaignOptions o;
  static_cast<CampaignPlan&>(o) = st.plan;
  o.out_dir = out_dir;
  o.resume = st;
  return o;
}

namespace {

CampaignState initial_state(const CampaignOptions& o, const std::string& backend_name) {
  CampaignState st;
  st.plan = o;  // the plan part of the options
  st.backend = backend_name;
  return st;
}

}  // namespace

namespace {

// The finding's HTML report beside its reproducer (same name, .html), from one more run of the
// minimal scenario: in a child when the campaign is isolated (the run may be what kills a
// process). Returns its path, or "" after saying why there is none.
std::string write_finding_report(const Finding& f, harness::Backend& backend,
                                 const std::optional<harness::isolation::Limits>& isolation, std::ostream& out) {
  const std::string path = f.path.substr(0, f.path.rfind(".json")) + ".html";
  const auto write = [&]() -> std::string {
    const harness::RunRecord run = backend.run(f.minimal);
    const auto verdicts = harness::check_properties(f.minimal, run);
    harness::write_file_atomically(path, harness::html_report(f.minimal, run, verdicts, "shardfuzz run " + f.path));
    // On a GPU: each rank's allocator snapshot at its last step's end or where it failed.
    nlohmann::json snapshots = nlohmann::json::object();
    for (const auto& r : run.ranks)
      if (!r.device_snapshot.is_null()) snapshots["rank " + std::to_string(r.rank)] = r.device_snapshot;
    if (!snapshots.empty())
      harness::write_file_atomically(f.path.substr(0, f.path.rfind(".json")) + ".snapshot.json", snapshots.dump(1));
    return "written";
  };
  try {
    if (isolation && backend.name() == "threads") {
      const harness::isolation::ChildOutcome o = harness::isolation::run_in_child(write, *isolation);
      if (!o.returned()) {
        out << "fuzz: no HTML report: its run's process " << o.describe(*isolation) << "\n";
        return "";
      }
    } else {
      write();
    }
  } catch (const std::exception& e) {
    out << "fuzz: no HTML report: " << e.what() << "\n";
    return "";
  }
  return path;
}

}  // namespace

namespace {

// One session of a campaign: its clock (time spent in earlier sessions included), its saved state
// (written after every case, so --resume continues a killed campaign) and its progress line.
class Session {
 public:
  Session(const CampaignOptions& options, const std::string& backend, CampaignResult& result, std::ostream& out)
      : options_(options), result_(result), out_(out), tty_(::isatty(STDOUT_FILENO) != 0) {
    state = options.resume ? *options.resume : initial_state(options, backend);
    if (options.resume) {
      ++state.sessions;
      const int stale = remove_stale_temporaries(options.out_dir);
      out << "fuzz: resuming " << campaign_state_path(options.out_dir) << " at case " << state.next_case << " ("
          << state.findings.size() << " finding(s) so far, " << static_cast<int>(state.elapsed_seconds) << " s spent"
          << (stale ? ", " + std::to_string(stale) + " stale temporary file(s) removed" : "") << ")\n" << std::flush;
    }
    result.earlier_findings = static_cast<int>(state.findings.size());
    spent_before_ = state.elapsed_seconds;
    save();
  }

  double elapsed() const { return spent_before_ + seconds_since(t0_); }
  bool tty() const { return tty_; }
  // Whether case k is past the campaign's --cases or --time, or past where a parallel campaign's
  // first finding stopped it.
  bool over(int k) const {
    return (options_.cases && k >= *options_.cases) || (options_.seconds && elapsed() >= *options_.seconds) ||
           stopped_before(options_.stop_file, k);
  }
  // This shard's cases among [0, next_case).
  int cases_done() const { return options_.shard_cases_before(state.next_case); }
  void case_done(int k) {
    state.next_case = k + 1;
    save();
  }
  // The one progress line: cases, rate, findings and time left; rewritten in place on a terminal.
  void report(bool final) {
    const double t = seconds_since(t0_);
    if (!final && t - last_report_ < (tty_ ? 0.2 : 5.0)) return;
    last_report_ = t;
    const double rate = t > 0 ? result_.cases_this_session / t : 0.0;
    // Time left: by the clock when --time is set, else estimated from the rate for --cases.
    double left = options_.seconds ? std::max(0.0, *options_.seconds - elapsed()) : -1;
    if (options_.cases && rate > 0) {
      const double by_cases = std::max(0, options_.shard_cases_before(*options_.cases) - cases_done()) / rate;
      left = left < 0 ? by_cases : std::min(left, by_cases);
    }
    char line[256];
    std::snprintf(line, sizeof line, "fuzz: %d cases, %.1f/s, %zu finding(s)%s", cases_done(), rate,
                  state.findings.size(),
                  left >= 0 && !final ? (", " + std::to_string(static_cast<int>(left)) + " s left").c_str() : "");
    out_ << (tty_ && !final ? "\r" : "") << line << (tty_ && !final ? "" : "\n") << std::flush;
  }
  CampaignResult finish() {
    state.finished = true;  // by its own limits or its first finding; a killed campaign never gets here
    save();
    result_.cases_run = cases_done();
    result_.elapsed_seconds = seconds_since(t0_);
    report(true);
    return result_;
  }

  CampaignState state;

 private:
  void save() {
    state.elapsed_seconds = elapsed();
    state.cases_run = cases_done();
    save_campaign_state(options_.out_dir, state);
  }

  const CampaignOptions& options_;
  CampaignResult& result_;
  std::ostream& out_;
  const bool tty_;
  const Clock::time_point t0_ = Clock::now();
  double spent_before_ = 0;
  double last_report_ = 0;
};

// A differential finding's attribution (torch changed, native model wrong, or a property both
// sides fail, then blamed natively on a zoo row) into `f`, and what its reproducer keeps: the torch
// version, what torch ran as, the first divergence and both sides' timelines of the diverging rank.
nlohmann::json attribute_differential(harness::differential::Differential& differential,
                                      const harness::differential::DifferentialCase& c, Finding& f) {
  const harness::differential::Attribution a = differential.attribute(c);
  f.zoo = a.slug();
  f.blamed = a.text;
  if (a.kind == harness::differential::Attribution::Kind::PropertyFailedOnBoth) {
    const auto blames = harness::zoo::blame(c.native_scenario, &c.native);
    if (!blames.empty()) f.blamed += " (bug zoo: " + harness::zoo::describe(blames) + ")";
  }
  // The diverging rank's compared events (the divergence's index counts them).
  const int rank = c.divergence ? c.divergence->rank : 0;
  auto timeline = [rank](const harness::RunRecord& run) {
    nlohmann::json events = nlohmann::json::array();
    if (rank < static_cast<int>(run.ranks.size()))
      for (const auto* e : harness::differential::compared_events(run.ranks[rank])) events.push_back(e->to_json());
    return events;
  };
  const auto& o = differential.options();
  return {{"torch", o.model.version},
          {"profile", o.model.profile},
          {"torch_ran_as", o.torch_as.empty() ? "installed" : o.torch_as},
          {"attribution", a.to_json()},
          {"divergence", c.divergence ? c.divergence->to_json() : nlohmann::json()},
          {"timelines", {{"rank", rank}, {"native", timeline(c.native)}, {"torch", timeline(c.torch)}}}};
}

// The case that failed, shrunk (keeping the hunted row, when there is one), blamed, written as a
// reproducer with its HTML report.
Finding shrink_and_write(const CampaignOptions& options, harness::Backend& backend, CaseRunner& runner,
                         const rc::Shrinkable<harness::Scenario>& drawn, const CaseCheck& failing, int k,
                         std::ostream& out) {
  Finding f;
  f.property = *failing.property;
  const std::string failure = *failing.failure();  // what every shrink step must reproduce
  // Hunting a row, a shrink step must keep the row too (e.g. row 1 needs its reentrant block:
  // replacing it by a non-reentrant one would still fail, as row 5).
  const CasePool::Task still_fails_on = [&](CaseRunner& on, const harness::Scenario& s) -> std::optional<std::string> {
    if (stopped_before(options.stop_file, k)) throw CaseOvertaken{};
    // A divergence's identity needs both sides whole; a property's, only the properties up to it.
    const CaseCheck c = on.check(s, failing.differential ? "" : f.property);
    if (!c.property || options.until_row.empty()) return c.failure();
    return blamed_on(on.blame(s, &c, options.until_row), options.until_row) ? c.failure() : std::nullopt;
  };
  auto still_fails = [&](const harness::Scenario& s) { return still_fails_on(runner, s); };
  // Candidates run side by side on isolated workers: the same minimal case, in fewer rounds.
  std::optional<CasePool> pool;
  ShrinkInParallel parallel;
  if (options.shrink_workers > 1 && runner.isolated() && !failing.differential && options.isolation) {
    pool.emplace(runner, backend, *options.isolation, options.shrink_workers);
    parallel.width = pool->width();
    parallel.fails = [&](const std::vector<const harness::Scenario*>& batch) { return pool->run(batch, still_fails_on); };
  }
  f.shrink = shrink(
      drawn, still_fails, options.shrink_budget,
      [&](const ShrinkStep& step) {
        out << "fuzz:   shrink step " << step.accepted << ": " << step.edit << "; " << step.tried << " tried, "
            << static_cast<int>(step.elapsed_seconds) << " s: " << describe(step.scenario) << "\n" << std::flush;
      },
      failure, parallel);
  f.minimal = f.shrink.minimal;
  const CaseCheck minimal_check = runner.check(f.minimal);
  f.message = minimal_check.message;
  nlohmann::json differential;
  if (minimal_check.differential) {
    differential = attribute_differential(*runner.differential(), *minimal_check.differential, f);
    f.differential = true;
  } else {
    const auto blames =
        minimal_check.property ? runner.blame(f.minimal, &minimal_check) : std::vector<harness::zoo::Blame>{};
    f.blamed = harness::zoo::describe(blames);
    f.zoo = blames.empty() ? "unattributed" : blames.front().row;
    if (!backend.is_embedded_default() && blames.empty() &&
        runner.verdict_under(f.minimal, f.minimal.profile.name) == "pass")
      f.blamed = "unattributed: the native runtime passes it under " + f.minimal.profile.name +
                 " — a divergence between " + backend.name() + " and the native runtime";
  }
  f.path = write_reproducer(f.minimal, f.property, f.message, options.out_dir,
                            options.command.empty() ? "shardfuzz fuzz --seed " + std::to_string(options.seed) : options.command,
                            f.zoo, &runner, differential, pool ? &*pool : nullptr);
  f.report = write_finding_report(f, backend, options.isolation, out);
  return f;
}

// A differential case's line of the campaign's per-case results.
CaseOutcome differential_case(int k, uint64_t seed, double seconds, const CaseCheck& check, const harness::Scenario& s) {
  return {k, seed, seconds, check.property.value_or(""), check.message, check.differential->torch_seconds,
          check.differential->native_seconds, check.differential->layer_bytes_difference, harness::features_of(s)};
}

// The shrink of case k, claimed first for a --jobs parent; nullopt when another job's lower failing
// case overtook it (a campaign of one job would have stopped before it).
std::optional<Finding> shrink_unless_overtaken(const CampaignOptions& options, harness::Backend& backend,
                                               CaseRunner& runner, const rc::Shrinkable<harness::Scenario>& drawn,
                                               const CaseCheck& check, int k, std::ostream& out) {
  claim_failing_case(options, k);
  try {
    return shrink_and_write(options, backend, runner, drawn, check, k, out);
  } catch (const CaseOvertaken&) {
    out << "fuzz: case " << k << " is past a lower failing case of another job: its shrink is dropped\n" << std::flush;
    return std::nullopt;
  }
}

void print_finding(const Finding& f, std::ostream& out) {
  out << "fuzz: minimal case: " << describe(f.minimal) << (f.differential ? "\nfuzz: attribution: " : "\nfuzz: bug zoo: ")
      << f.blamed << "\nfuzz: " << f.property
      << ": " << f.message << "\nfuzz: wrote " << f.path << " (" << f.shrink.steps_accepted << " shrink steps accepted of "
      << f.shrink.steps_tried << " tried in " << static_cast<int>(f.shrink.elapsed_seconds) << " s"
      << (f.shrink.budget_exhausted ? ", budget exhausted" : "") << "; found at " << static_cast<int>(f.seconds_to_find)
      << " s, shrunk by " << static_cast<int>(f.seconds_to_shrink) << " s)\nreplay with: shardfuzz run " << f.path << "\n"
      << (f.report.empty() ? "" : "report: " + f.report + "\n") << std::flush;
}

// Without --keep-going a campaign ends at its first finding, except that a differential campaign
// ends at its first divergence: a property that fails on both torch and the native model is a bug
// of the torch installed (written and counted), not an answer to whether the model still holds.
bool ends_campaign(const CampaignOptions& options, const Finding& f) {
  if (options.keep_going) return false;
  return !(f.differential && f.zoo == "property-failed-on-both");
}

// Guidance when the campaign asked for it or the build counts edges (a plain campaign's coverage,
// to compare with); nullptr otherwise, so a plain build's case costs nothing more.
std::unique_ptr<Guidance> guidance_for(const CampaignOptions& options, std::ostream& out) {
  if (!options.coverage_guided && !coverage::instrumented()) return nullptr;
  const std::string corpus =
      !options.coverage_guided ? "" : options.corpus_dir.empty() ? options.out_dir + "/corpus" : options.corpus_dir;
  return std::make_unique<Guidance>(options.gen, corpus, out);
}

// The campaign's coverage, printed and written to OUT/coverage.json.
void report_coverage(const Guidance& guidance, const CampaignOptions& options, std::ostream& out) {
  const nlohmann::json summary = guidance.summary();
  harness::write_file_atomically(options.out_dir + "/coverage.json", summary.dump(2) + "\n");
  out << Guidance::describe(summary) << "\n" << std::flush;
}

}  // namespace

CampaignResult run_campaign(const CampaignOptions& options, std::ostream& out) {
  CampaignResult result;
  harness::Backend& backend = *options.backend;
  CaseRunner runner(backend, options.isolation);
  if (options.torch_and_native) runner.set_differential(options.torch_and_native.get());
  Session session(options, backend.name(), result, out);
  // A differential campaign that goes on after a finding shrinks each failure (property and
  // divergence identity) once: every shrink step runs torch too, and a torch that changed makes
  // most cases fail the same way. The repeats stay in the per-case results.
  std::set<std::string> shrunk;
  const std::unique_ptr<Guidance> guidance = guidance_for(options, out);
  CampaignFindingsDb db(options, options.torch_and_native ? options.torch_and_native->options().model.version : "");
  for (int k = session.state.next_case; !session.over(k); ++k) {
    if (!options.in_shard(k)) continue;  // another shard's case
    const uint64_t seed = case_seed(options.seed, k);
    const int size = case_size(k);
    const Guidance::Draw draw =
        guidance ? guidance->draw(seed, size) : Guidance::Draw{generate_shrinkable(options.gen, seed, size), "generated"};
    const rc::Shrinkable<harness::Scenario>& drawn = draw.shrinkable;
    const auto started = Clock::now();
    const CaseCheck check = runner.check(drawn.value());
    if (guidance) guidance->after_case(drawn.value(), k, seed);
    ++result.cases_this_session;
    if (check.differential) result.cases.push_back(differential_case(k, seed, seconds_since(started), check, drawn.value()));
    // Hunting one row: blame the drawn case first (a few runs) and shrink only candidates for the
    // row; the minimal case is blamed again, since shrinking can move it to another.
    const bool hunted = check.property && (options.until_row.empty() ||
                                           blamed_on(runner.blame(drawn.value(), &check, options.until_row), options.until_row));
    if (!hunted) {
      session.case_done(k);
      if (!check.property) session.report(false);
      continue;
    }
    if (check.differential && !shrunk.insert(*check.failure()).second) {
      ++result.repeated_failures;
      out << (session.tty() ? "\n" : "") << "fuzz: case " << k << " (seed " << seed << ") fails " << *check.failure()
          << " again (shrunk already this session; not shrunk again)\n" << std::flush;
      session.case_done(k);
      continue;
    }
    const double found_at = session.elapsed();
    out << (session.tty() ? "\n" : "") << "fuzz: case " << k << " (seed " << seed << ", size " << size << ") fails "
        << *check.property << ": " << check.message << (draw.origin == "generated" ? "" : "\nfuzz: case is a " + draw.origin)
        << "\nfuzz: shrinking (" << describe(drawn.value()) << ")\n"
        << std::flush;
    std::optional<Finding> shrunk_finding = shrink_unless_overtaken(options, backend, runner, drawn, check, k, out);
    if (!shrunk_finding) break;
    Finding f = std::move(*shrunk_finding);
    f.case_seed = seed;
    f.size = size;
    f.seconds_to_find = found_at;
    if (!options.until_row.empty() && f.zoo != options.until_row) {
      session.case_done(k);
      out << "fuzz: minimal case blamed on " << f.blamed << ", not row " << options.until_row << " (wrote " << f.path
          << "); going on\n";
      continue;
    }
    // The finding joins the saved state with its case marked done, in one save: a campaign killed
    // between the two would resume past the case without the finding.
    session.state.findings.push_back({k, seed, f.property, f.path, f.zoo});
    session.case_done(k);
    f.seconds_to_shrink = session.elapsed();
    db.record(f);
    print_finding(f, out);
    const bool ends = ends_campaign(options, f);
    result.findings.push_back(std::move(f));
    if (ends) break;
  }
  if (options.torch_and_native) {
    result.torch_version = options.torch_and_native->options().model.version;
    result.profile = options.torch_and_native->options().model.profile;
  }
  if (guidance) report_coverage(*guidance, options, out);
  // A whole campaign replays the known findings it did not see (a shard cannot tell: its parent or
  // `merge` sees the whole).
  if (options.shard_count == 1 && options.findings_run == 0) result.night = db.close(runner);
  return session.finish();
}

}  // namespace shardfuzz::fuzz
