// Writing a finding's reproducer and its report.
#include "fuzz/campaign/write_reproducer.h"

#include "fuzz/campaign/case_pool.h"
#include "harness/files/write_file.h"
#include "harness/isolation/child_process.h"
#include "harness/properties/property.h"
#include "harness/report/html_report.h"
#include "harness/reproducer.h"
#include "harness/scenario/scenario_json.h"
#include "runtime/semantics/profile.h"

#include <algorithm>
#include <filesystem>

namespace shardfuzz::fuzz {
namespace {

// Whether the reproducer at `path` is of `minimal` (names aside): the same finding, written again.
bool holds(const std::string& path, const harness::Scenario& minimal) {
  try {
    harness::Scenario written = harness::load_reproducer(path).scenario;
    harness::Scenario scenario = minimal;
    written.name = scenario.name = "";
    return harness::to_json_text(written) == harness::to_json_text(scenario);
  } catch (const std::exception&) {
    return false;  // unreadable: not ours to overwrite
  }
}

// "zoo-ROW-" for a zoo row; a differential finding's class names it itself ("torch-changed-...").
std::string name_of(const harness::Scenario& minimal, const std::string& property, const std::string& zoo,
                    bool differential, const std::string& dir) {
  const std::string prefix = zoo.empty() || zoo == "unattributed" ? "" : differential ? zoo + "-" : "zoo-" + zoo + "-";
  std::string name = prefix + property + "-" + minimal.profile.name + "-" + std::to_string(minimal.seed % 1000000);
  std::replace(name.begin(), name.end(), '+', '_');
  // Two findings can share those digits (mutants of one corpus scenario keep its seed): the later
  // one takes a suffix instead of overwriting the earlier reproducer. The same finding written
  // again keeps its name: a campaign killed after writing a case's reproducer and before saving
  // the case as done runs the case again on --resume, and must end with the files an uninterrupted
  // campaign writes (ci/kill-resume.sh).
  const std::string base = name;
  for (int n = 2; std::filesystem::exists(dir + "/" + name + ".json") && !holds(dir + "/" + name + ".json", minimal); ++n)
    name = base + "-" + std::to_string(n);
  return name;
}

}  // namespace

std::string write_reproducer(const harness::Scenario& minimal, const std::string& property, const std::string& message,
                             const std::string& dir, const std::string& found_by, const std::string& zoo,
                             CaseRunner* runner, const nlohmann::json& differential, CasePool* pool) {
  harness::Reproducer r;
  r.scenario = minimal;
  r.name = name_of(minimal, property, zoo, !differential.is_null(), dir);
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

std::string write_finding_report(const Finding& f, harness::Backend& backend,
                                 const std::optional<harness::isolation::Limits>& isolation, std::ostream& out) {
  const std::string stem = f.path.substr(0, f.path.rfind(".json"));
  const auto write = [&]() -> std::string {
    const harness::RunRecord run = backend.run(f.minimal);
    const auto verdicts = harness::check_properties(f.minimal, run);
    harness::write_file_atomically(stem + ".html", harness::html_report(f.minimal, run, verdicts, "shardfuzz run " + f.path));
    // On a GPU: each rank's allocator snapshot at its last step's end or where it failed.
    nlohmann::json snapshots = nlohmann::json::object();
    for (const auto& r : run.ranks)
      if (!r.device_snapshot.is_null()) snapshots["rank " + std::to_string(r.rank)] = r.device_snapshot;
    if (!snapshots.empty()) harness::write_file_atomically(stem + ".snapshot.json", snapshots.dump(1));
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
  return stem + ".html";
}

}  // namespace shardfuzz::fuzz
