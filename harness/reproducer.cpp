// Reproducer files and their replay.
#include "harness/reproducer.h"

#include "harness/files/read_file.h"

#include "harness/isolation/child_process.h"
#include "harness/files/json_files.h"
#include "harness/properties/property.h"
#include "harness/scenario/scenario_json.h"
#include "harness/backends/threads/threads_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace shardfuzz::harness {
namespace {

std::string text_field(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return "";
  if (!j.at(key).is_string()) throw std::invalid_argument(std::string(key) + ": expected a string");
  return j.at(key).get<std::string>();
}

}  // namespace

nlohmann::json to_json(const Reproducer& r) {
  nlohmann::json j = nlohmann::json::object();
  j["schema"] = kScenarioSchema;
  j["name"] = r.name;
  j["zoo"] = r.zoo;
  j["found_by"] = r.found_by;
  j["explanation"] = r.explanation;
  j["message"] = r.message;
  j["expected"] = r.expected;
  j["scenario"] = to_json(r.scenario);
  if (!r.differential.is_null()) j["differential"] = r.differential;
  return j;
}

Reproducer reproducer_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("reproducer: expected an object");
  static const std::set<std::string> known = {"schema", "name", "zoo", "found_by", "explanation", "message",
                                              "expected", "scenario", "differential"};
  for (const auto& [key, value] : j.items())
    if (!known.count(key)) throw std::invalid_argument(key + ": unknown key");
  if (!j.contains("schema") || j.at("schema") != kScenarioSchema)
    throw std::invalid_argument("schema: expected " + std::to_string(kScenarioSchema));
  Reproducer r;
  r.name = text_field(j, "name");
  r.zoo = text_field(j, "zoo");
  r.found_by = text_field(j, "found_by");
  r.explanation = text_field(j, "explanation");
  r.message = text_field(j, "message");
  if (!j.contains("expected") || !j.at("expected").is_object())
    throw std::invalid_argument("expected: an object of profile -> property name or \"pass\"");
  for (const auto& [profile, verdict] : j.at("expected").items()) {
    if (!verdict.is_string()) throw std::invalid_argument("expected." + profile + ": expected a string");
    std::string v = verdict.get<std::string>();
    bool known_property = v == "pass" || v == kProcessSurvives;
    for (const Property& p : all_properties()) known_property = known_property || p.name == v;
    if (!known_property) throw std::invalid_argument("expected." + profile + ": unknown property '" + v + "'");
    r.expected[profile] = v;
  }
  if (j.contains("differential")) {
    if (!j.at("differential").is_object()) throw std::invalid_argument("differential: expected an object");
    r.differential = j.at("differential");
  }
  if (!j.contains("scenario")) throw std::invalid_argument("scenario: missing");
  try {
    r.scenario = scenario_from_json(j.at("scenario"));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("scenario.") + e.what());
  }
  return r;
}

Reproducer load_reproducer(const std::string& path) {
  try {
    return reproducer_from_json(nlohmann::json::parse(read_file(path)));
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(path + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

Scenario load_scenario_or_reproducer(const std::string& path) {
  const std::string text = read_file(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return parse_scenario(text);  // reports the position of the syntax error
  }
  if (j.is_object() && j.contains("scenario")) return load_reproducer(path).scenario;
  return parse_scenario(text);
}

namespace {

std::vector<Verdict> verdicts_under(const Scenario& scenario, const std::string& profile, Backend& backend) {
  Scenario sc = scenario;
  sc.profile = semantics::Profile::named(profile);
  const RunRecord run = backend.run(sc);
  return check_properties(sc, run);
}

}  // namespace

std::string verdict_under(const Scenario& scenario, const std::string& profile, std::string* message, Backend& backend) {
  const auto verdicts = verdicts_under(scenario, profile, backend);
  const Verdict* f = first_failure(verdicts);
  if (message) *message = f ? f->message : "";
  return f ? f->property : "pass";
}

namespace {

bool expects_process_death(const Reproducer& r) {
  return std::any_of(r.expected.begin(), r.expected.end(), [](const auto& e) { return e.second == kProcessSurvives; });
}

}  // namespace

std::vector<ReplayResult> replay_reproducer(const Reproducer& r, const std::string& file, Backend& backend) {
  std::vector<ReplayResult> out;
  for (const auto& [profile, expected] : r.expected) {
    if (!backend.runs_profile(profile)) continue;
    const auto t0 = std::chrono::steady_clock::now();
    const auto done = [&](ReplayResult&& res) {
      res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      out.push_back(std::move(res));
    };
    ReplayResult res;
    res.file = file;
    res.profile = profile;
    res.expected = expected;
    if (backend.is_embedded_default() && expects_process_death(r)) {  // its process dies by design: replay it in a child
      if (isolation::thread_count() > 1) {
        res.skipped = true;
        res.actual = "not run";
        res.message = "it kills its process; replay it from a fresh `shardfuzz replay` of its folder";
      } else {
        const isolation::Limits limits;
        const isolation::ChildOutcome o =
            isolation::run_in_child([&] { return verdict_under(r.scenario, profile); }, limits);
        res.actual = o.returned() ? o.output : kProcessSurvives;
        res.message = o.returned() ? "" : "the case's process " + o.describe(limits);
      }
      done(std::move(res));
      continue;
    }
    std::vector<Verdict> verdicts;
    try {
      verdicts = verdicts_under(r.scenario, profile, backend);
    } catch (const std::invalid_argument& e) {  // a scenario this backend cannot express
      if (backend.is_embedded_default()) throw;
      res.skipped = true;
      res.actual = "not run";
      res.message = "the " + backend.name() + " backend cannot run it: " + e.what();
      done(std::move(res));
      continue;
    }
    const Verdict* f = first_failure(verdicts);
    res.actual = f ? f->property : "pass";
    res.message = f ? f->message : "";
    for (const Verdict& v : verdicts)
      if (v.property == expected && v.skipped && res.actual != expected) {
        res.skipped = true;
        res.message = "not observable on the " + backend.name() + " backend: " + v.message;
      }
    done(std::move(res));
  }
  return out;
}

std::vector<ReplayResult> replay_dir(const std::string& dir, Backend& backend) {
  // Each file loaded once; the reproducers whose process dies go first, while this process is
  // single-threaded and can fork them (harness/isolation/child_outcome.h); then the rest here.
  struct Loaded {
    std::string name;
    std::optional<Reproducer> reproducer;
    std::string error;
  };
  std::vector<Loaded> loaded;
  for (const auto& f : json_files_in(dir, "replay")) {
    Loaded l{std::filesystem::path(f).filename().string(), std::nullopt, ""};
    try {
      l.reproducer = load_reproducer(f);
    } catch (const std::exception& e) {
      l.error = e.what();
    }
    loaded.push_back(std::move(l));
  }
  std::stable_partition(loaded.begin(), loaded.end(),
                        [](const Loaded& l) { return l.reproducer && expects_process_death(*l.reproducer); });
  std::vector<ReplayResult> out;
  for (const Loaded& l : loaded) {
    try {
      if (!l.reproducer) throw std::invalid_argument(l.error);
      auto results = replay_reproducer(*l.reproducer, l.name, backend);
      out.insert(out.end(), results.begin(), results.end());
    } catch (const std::exception& e) {
      out.push_back({l.name, "-", "a loadable reproducer", "error", e.what()});
    }
  }
  return out;
}

}  // namespace shardfuzz::harness
