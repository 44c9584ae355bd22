// Reproducers: a minimised scenario with its expected verdict per profile (the first failing
// property, or "pass"), the bug-zoo row it matches, the message it failed with and the command
// that found it. Written atomically (temp file + rename: never half-written); replayed by ctest
// and `shardfuzz replay DIR`.
#pragma once

#include "harness/backends/backend.h"
#include "harness/backends/threads/threads_backend.h"
#include "harness/files/write_file.h"  // reproducers are written with write_file_atomically
#include "harness/scenario/scenario.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace shardfuzz::harness {

struct Reproducer {
  std::string name;
  std::string zoo;          // bug-zoo row, e.g. "seed" or "5"
  std::string found_by;     // the command that found it
  std::string explanation;  // why it fails, in a sentence or two
  std::string message;      // the failed property's message when it was found
  std::map<std::string, std::string> expected;  // profile -> first failing property, or "pass"
  Scenario scenario;
  // A differential finding (harness/differential): the torch version and what it ran as, the
  // first divergence, its attribution, and both sides' timelines. Null otherwise.
  nlohmann::json differential;
};

nlohmann::json to_json(const Reproducer& reproducer);
Reproducer reproducer_from_json(const nlohmann::json& json);  // std::invalid_argument naming the path
Reproducer load_reproducer(const std::string& path);
// A file holding either a reproducer or a bare scenario.
Scenario load_scenario_or_reproducer(const std::string& path);

// Runs the scenario under `profile` on `backend` and returns the first failing property's name,
// or "pass"; `message` receives the failure message.
std::string verdict_under(const Scenario& scenario, const std::string& profile, std::string* message = nullptr,
                          Backend& backend = threads_backend());

struct ReplayResult {
  std::string file;
  std::string profile;
  std::string expected;
  std::string actual;
  std::string message;
  bool skipped = false;  // the backend cannot run this (message says why)
  double seconds = 0;    // the replay's wall clock
  bool ok() const { return skipped || expected == actual; }
};
// Every profile the reproducer lists that `backend` runs (the threads backend: all of them); on
// the embedded default, a reproducer whose process dies by design is replayed in a forked child.
// A verdict whose property the backend could not observe, or a scenario it cannot express,
// is a skipped result saying why.
std::vector<ReplayResult> replay_reproducer(const Reproducer& reproducer, const std::string& file,
                                            Backend& backend = threads_backend());
// Every *.json in `dir`, sorted.
std::vector<ReplayResult> replay_dir(const std::string& dir, Backend& backend = threads_backend());

}  // namespace shardfuzz::harness
