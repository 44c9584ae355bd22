// The campaign loop.
#include "fuzz/campaign.h"

#include "fuzz/gen/generate.h"
#include "harness/properties/property.h"
#include "harness/reproducer.h"
#include "harness/threads_backend.h"
#include "harness/zoo/blame.h"
#include "runtime/fsdp/profile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <unistd.h>

namespace shardfuzz::fuzz {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

// One run of a scenario and its first failing property (the run is kept for blaming).
struct Checked {
  harness::RunRecord run;
  std::optional<std::string> property;
  std::string message;
};

Checked check(const harness::Scenario& scenario, harness::Backend* backend) {
  Checked c;
  c.run = backend ? backend->run(scenario) : harness::run_threads(scenario);
  const auto verdicts = harness::check_properties(scenario, c.run);
  if (const harness::Verdict* f = harness::first_failure(verdicts)) {
    c.property = f->property;
    c.message = f->message;
  }
  return c;
}

bool blamed_on(const std::vector<harness::zoo::Blame>& blames, const std::string& row) {
  return std::any_of(blames.begin(), blames.end(), [&](const harness::zoo::Blame& b) { return b.row == row; });
}

}  // namespace

std::optional<std::string> first_failing_property(const harness::Scenario& scenario, std::string* message,
                                                  harness::Backend* backend) {
  Checked c = check(scenario, backend);
  if (message) *message = c.message;
  return c.property;
}

std::string write_reproducer(const harness::Scenario& minimal, const std::string& property, const std::string& message,
                             const std::string& dir, const std::string& found_by, const std::string& zoo) {
  harness::Reproducer r;
  r.scenario = minimal;
  r.name = (zoo.empty() || zoo == "unattributed" ? "" : "zoo-" + zoo + "-") + property + "-" + minimal.profile + "-" +
           std::to_string(minimal.seed % 1000000);
  std::replace(r.name.begin(), r.name.end(), '+', '_');
  r.scenario.name = r.name;
  r.found_by = found_by;
  r.message = message;
  r.zoo = zoo;
  for (const auto& profile : fsdp::Profile::names()) r.expected[profile] = harness::verdict_under(minimal, profile);
  r.expected[minimal.profile] = harness::verdict_under(minimal, minimal.profile);
  const std::string path = dir + "/" + r.name + ".json";
  harness::write_file_atomically(path, harness::to_json(r).dump(2) + "\n");
  return path;
}

CampaignResult run_campaign(const CampaignOptions& options, std::ostream& out) {
  CampaignResult result;
  harness::Backend* backend = options.backend.get();
  // Blame re-runs natively; the run that saw the failure is reusable only when it was native.
  auto native = [&](const Checked& c) { return backend ? nullptr : &c.run; };
  const auto t0 = Clock::now();
  const bool tty = ::isatty(STDOUT_FILENO) != 0;
  double last_report = 0;
  auto report = [&](bool final) {
    const double t = seconds_since(t0);
    if (!final && t - last_report < (tty ? 0.2 : 5.0)) return;
    last_report = t;
    char line[256];
    const double left = options.seconds ? std::max(0.0, *options.seconds - t) : -1;
    std::snprintf(line, sizeof line, "fuzz: %d cases, %.1f/s, %zu finding(s)%s", result.cases_run,
                  t > 0 ? result.cases_run / t : 0.0, result.findings.size(),
                  left >= 0 ? (", " + std::to_string(static_cast<int>(left)) + " s left").c_str() : "");
    out << (tty && !final ? "\r" : "") << line << (tty && !final ? "" : "\n") << std::flush;
  };
  for (int k = 0;; ++k) {
    if (options.cases && k >= *options.cases) break;
    if (options.seconds && seconds_since(t0) >= *options.seconds) break;
    const uint64_t seed = case_seed(options.seed, k);
    const int size = case_size(k);
    rc::Shrinkable<harness::Scenario> drawn = generate_shrinkable(options.gen, seed, size);
    const Checked drawn_check = check(drawn.value(), backend);
    const std::optional<std::string>& failure = drawn_check.property;
    const std::string& message = drawn_check.message;
    ++result.cases_run;
    report(false);
    if (!failure) continue;
    // Hunting one row: blame the drawn case first (a few runs) and shrink only candidates for the
    // row; the minimal case is blamed again below, since shrinking can move it to another.
    if (!options.until_row.empty() && !blamed_on(harness::zoo::blame(drawn.value(), native(drawn_check)), options.until_row))
      continue;
    const double found_at = seconds_since(t0);
    if (tty) out << "\n";
    out << "fuzz: case " << k << " (seed " << seed << ", size " << size << ") fails " << *failure << ": " << message
        << "\nfuzz: shrinking (" << describe(drawn.value()) << ")\n" << std::flush;
    Finding f;
    f.case_seed = seed;
    f.size = size;
    f.property = *failure;
    // Hunting a row, a shrink step must keep the row too (e.g. row 1 needs its reentrant block:
    // replacing it by a non-reentrant one would still fail, as row 5).
    auto still_fails = [&](const harness::Scenario& s) -> std::optional<std::string> {
      const Checked c = check(s, backend);
      if (!c.property || options.until_row.empty()) return c.property;
      return blamed_on(harness::zoo::blame(s, native(c)), options.until_row) ? c.property : std::nullopt;
    };
    f.shrink = shrink(
        drawn, still_fails, options.shrink_budget,
        [&](const ShrinkStep& step) {
          out << "fuzz:   shrink step " << step.accepted << " (" << step.tried << " tried, "
              << static_cast<int>(step.elapsed_seconds) << " s): " << describe(step.scenario) << "\n" << std::flush;
        },
        *failure);
    f.minimal = f.shrink.minimal;
    const Checked minimal_check = check(f.minimal, backend);
    f.message = minimal_check.message;
    const auto blames = harness::zoo::blame(f.minimal, minimal_check.property ? native(minimal_check) : nullptr);
    f.blamed = harness::zoo::describe(blames);
    f.zoo = blames.empty() ? "unattributed" : blames.front().row;
    if (backend && blames.empty() && harness::verdict_under(f.minimal, f.minimal.profile) == "pass")
      f.blamed = "unattributed: the native runtime passes it under " + f.minimal.profile +
                 " — a divergence between " + backend->name() + " and the native runtime";
    f.seconds_to_find = found_at;
    f.path = write_reproducer(f.minimal, f.property, f.message, options.out_dir,
                              options.command.empty() ? "shardfuzz fuzz --seed " + std::to_string(options.seed)
                                                      : options.command,
                              f.zoo);
    if (!options.until_row.empty() && f.zoo != options.until_row) {
      out << "fuzz: minimal case blamed on " << f.blamed << ", not row " << options.until_row << " (wrote " << f.path
          << "); going on\n";
      continue;
    }
    f.seconds_to_shrink = seconds_since(t0);
    out << "fuzz: minimal case: " << describe(f.minimal) << "\nfuzz: bug zoo: " << f.blamed << "\nfuzz: " << f.property
        << ": " << f.message
        << "\nfuzz: wrote " << f.path << " (" << f.shrink.steps_accepted << " shrink steps accepted of "
        << f.shrink.steps_tried << " tried in " << static_cast<int>(f.shrink.elapsed_seconds) << " s"
        << (f.shrink.budget_exhausted ? ", budget exhausted" : "") << "; found at " << static_cast<int>(f.seconds_to_find)
        << " s, shrunk by " << static_cast<int>(f.seconds_to_shrink) << " s)\nreplay with: shardfuzz run " << f.path << "\n"
        << std::flush;
    result.findings.push_back(std::move(f));
    if (!options.keep_going) break;
  }
  result.elapsed_seconds = seconds_since(t0);
  report(true);
  return result;
}

}  // namespace shardfuzz::fuzz
