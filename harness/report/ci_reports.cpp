// The CI reports of a replay and of a campaign.
#include "harness/report/ci_reports.h"

#include "harness/files/write_file.h"
#include "harness/scenario/scenario_features.h"

#include <algorithm>
#include <exception>

namespace shardfuzz::harness {
namespace {

// "" when written (or not asked for), else why not.
std::string write_if_asked(const std::string& path, const std::string& text) {
  if (path.empty()) return "";
  try {
    write_file_atomically(path, text);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

CiReportErrors write_ci_reports(const CiReportFiles& files, const std::vector<JUnitSuite>& suites,
                                const nlohmann::json& summary) {
  CiReportErrors errors;
  errors.junit = write_if_asked(files.junit, files.junit.empty() ? "" : junit_xml(suites));
  errors.summary = write_if_asked(files.summary, summary.dump(1) + "\n");
  return errors;
}

JUnitSuite replay_suite(const std::string& dir, const std::string& backend, const std::vector<ReplayResult>& results) {
  JUnitSuite suite{"replay " + dir + " (" + backend + ")", {}};
  for (const auto& r : results) {
    JUnitCase c;
    c.classname = r.file;
    c.name = r.profile;
    c.seconds = r.seconds;
    using Outcome = JUnitCase::Outcome;
    c.outcome = r.skipped ? Outcome::Skipped : r.ok() ? Outcome::Passed : r.actual == "error" ? Outcome::Error : Outcome::Failed;
    if (c.outcome == Outcome::Skipped) c.message = r.message;
    if (c.outcome == Outcome::Failed || c.outcome == Outcome::Error) {
      c.message = "expected " + r.expected + ", got " + r.actual;
      c.text = r.message + "\nreplay with: shardfuzz run --profile " + r.profile + " " + dir + "/" + r.file;
    }
    suite.cases.push_back(std::move(c));
  }
  return suite;
}

nlohmann::json replay_summary(const std::string& dir, const std::string& backend,
                              const std::vector<ReplayResult>& results) {
  int passed = 0, failed = 0, skipped = 0;
  for (const auto& r : results) ++(r.skipped ? skipped : r.ok() ? passed : failed);
  nlohmann::json j = {{"command", "replay"}, {"dir", dir},       {"backend", backend},
                      {"passed", passed},    {"failed", failed}, {"skipped", skipped},
                      {"results", nlohmann::json::array()}};
  for (const auto& r : results)
    j["results"].push_back({{"file", r.file},
                            {"profile", r.profile},
                            {"expected", r.expected},
                            {"actual", r.actual},
                            {"ok", r.ok()},
                            {"skipped", r.skipped},
                            {"message", r.message},
                            {"seconds", r.seconds}});
  return j;
}

namespace {

// One test case per known finding this night touched: new and still failing ones fail (the new
// ones say so), fixed ones pass, ones that could not be replayed are skipped.
void add_night_cases(const CampaignReport::Night& night, JUnitSuite& suite) {
  const auto add = [&](const std::vector<CampaignReport::Known>& rows, const char* state, JUnitCase::Outcome outcome) {
    for (const auto& k : rows) {
      JUnitCase one;
      one.classname = std::string("fuzz.findings.") + state;
      one.name = k.signature;
      one.outcome = outcome;
      one.message = std::string(state) + ": " + k.property + " (bug zoo: " + k.zoo + "), first seen " + k.first_seen +
                    ", seen " + std::to_string(k.count) + " time(s)";
      one.text = "replay with: shardfuzz run " + k.reproducer_path + "\n";
      suite.cases.push_back(std::move(one));
    }
  };
  add(night.fresh, "new", JUnitCase::Outcome::Failed);
  add(night.still_failing, "still_failing", JUnitCase::Outcome::Failed);
  add(night.fixed, "fixed", JUnitCase::Outcome::Passed);
  add(night.not_replayed, "not_replayed", JUnitCase::Outcome::Skipped);
}

nlohmann::json night_json(const CampaignReport::Night& night) {
  const auto rows = [](const std::vector<CampaignReport::Known>& known) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& k : known)
      out.push_back({{"signature", k.signature},
                     {"property", k.property},
                     {"zoo", k.zoo},
                     {"first_seen", k.first_seen},
                     {"last_seen", k.last_seen},
                     {"count", k.count},
                     {"reproducer", k.reproducer_path}});
    return out;
  };
  return {{"database", night.database},
          {"new", rows(night.fresh)},
          {"still_failing", rows(night.still_failing)},
          {"fixed", rows(night.fixed)},
          {"not_replayed", rows(night.not_replayed)}};
}

}  // namespace

JUnitSuite campaign_suite(const CampaignReport& r) {
  JUnitCase kase;
  kase.classname = "fuzz";
  kase.name = "campaign seed " + std::to_string(r.seed) + " (" + std::to_string(r.cases_run) + " cases)";
  kase.seconds = r.elapsed_seconds;
  const std::size_t total = r.findings.size() + static_cast<std::size_t>(r.earlier_findings);
  if (total > 0) {
    kase.outcome = JUnitCase::Outcome::Failed;
    kase.message = std::to_string(total) + " finding(s)";
    if (r.earlier_findings) kase.text = std::to_string(r.earlier_findings) + " found before the resume (in " + r.out_dir + ")\n";
    for (const auto& f : r.findings)
      kase.text += f.property + ": " + f.message + "\nreplay with: shardfuzz run " + f.path + "\n";
  }
  JUnitSuite suite{"fuzz " + r.out_dir, {kase}};
  if (r.night) add_night_cases(*r.night, suite);
  for (const auto& c : r.cases) {
    JUnitCase one;
    one.classname = "fuzz.differential";
    one.name = "case " + std::to_string(c.index) + " (seed " + std::to_string(c.seed) + ")";
    one.seconds = c.seconds;
    if (!c.failure.empty()) {
      one.outcome = JUnitCase::Outcome::Failed;
      one.message = c.failure;
      one.text = c.message;
    }
    suite.cases.push_back(std::move(one));
  }
  return suite;
}

nlohmann::json campaign_summary(const CampaignReport& r) {
  nlohmann::json j = {{"command", "fuzz"},
                      {"seed", r.seed},
                      {"out", r.out_dir},
                      {"cases", r.cases_run},
                      {"seconds", r.elapsed_seconds},
                      {"earlier_findings", r.earlier_findings},
                      {"findings", nlohmann::json::array()}};
  for (const auto& f : r.findings)
    j["findings"].push_back({{"property", f.property},
                             {"message", f.message},
                             {"path", f.path},
                             {"zoo", f.zoo},
                             {"seconds_to_find", f.seconds_to_find},
                             {"seconds_to_shrink", f.seconds_to_shrink}});
  if (r.night) j["findings_db"] = night_json(*r.night);
  if (!r.torch_version.empty()) {
    // What a differential campaign's findings mean: torch changed, the native model is wrong, or a
    // property fails on both sides (a bug in that torch, as the native runtime models it).
    nlohmann::json classes = {{"torch-changed", 0}, {"native-model-wrong", 0}, {"property-failed-on-both", 0}};
    for (const auto& f : r.findings)
      if (classes.contains(f.zoo)) classes[f.zoo] = classes[f.zoo].get<int>() + 1;
    // What the cases exercised: every feature, drawn or not, and each world size drawn.
    nlohmann::json drawn = nlohmann::json::object();
    for (const auto& name : scenario_feature_names()) drawn[name] = 0;
    for (const auto& c : r.cases)
      for (const auto& f : c.features) drawn[f] = drawn.value(f, 0) + 1;
    int diverged = 0, failed_on_both = 0, bytes_compared = 0;
    int64_t largest_bytes_difference = 0;
    double torch_s = 0, native_s = 0;
    for (const auto& c : r.cases) {
      bytes_compared += c.layer_bytes_difference.has_value();
      largest_bytes_difference = std::max(largest_bytes_difference, c.layer_bytes_difference.value_or(0));
      diverged += c.failure == "matches_torch";
      failed_on_both += !c.failure.empty() && c.failure != "matches_torch";
      torch_s += c.torch_seconds;
      native_s += c.native_seconds;
    }
    const double n = static_cast<double>(r.cases.size());
    j["differential"] = {{"torch", r.torch_version},
                         {"profile", r.profile},
                         {"findings_by_class", classes},
                         {"cases_diverged", diverged},
                         {"cases_failed_on_both", failed_on_both},
                         {"cases_layer_bytes_compared", bytes_compared},
                         {"largest_layer_bytes_difference", largest_bytes_difference},
                         {"drawn", drawn},
                         {"torch_seconds", torch_s},
                         {"native_seconds", native_s},
                         {"torch_cases_per_minute", torch_s > 0 ? 60 * n / torch_s : 0.0},
                         {"native_cases_per_minute", native_s > 0 ? 60 * n / native_s : 0.0}};
  }
  return j;
}

}  // namespace shardfuzz::harness
