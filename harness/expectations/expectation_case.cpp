// Reading expectation cases.
#include "harness/expectations/expectation_case.h"

#include "harness/scenario/scenario_json.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

namespace shardfuzz::harness::expectations {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& path, const std::string& what, const json& value) {
  throw std::invalid_argument(path + ": " + what + " (got " + value.dump().substr(0, 200) + ")");
}

PhaseRef phase_of(const json& j, const std::string& path) {
  PhaseRef w;
  w.step = j.value("step", 0);
  w.phase = j.value("phase", std::string("forward"));
  w.micro_batch = j.value("micro_batch", 0);
  if (w.phase != "forward" && w.phase != "backward") bad(path + ".phase", "expected \"forward\" or \"backward\"", j);
  if (w.step < 0 || w.micro_batch < 0) bad(path, "step and micro_batch are >= 0", j);
  return w;
}

UpstreamEvent event_of(const json& j, const std::string& path) {
  static const std::set<std::string> kinds = {"unshard", "reshard", "post_backward", "prefetch"};
  if (!j.is_array() || j.size() != 3 || !j[0].is_string() || !j[1].is_string() || !j[2].is_string())
    bad(path, "expected [kind, module, state] (prefetch: [\"prefetch\", issuer, target])", j);
  UpstreamEvent e{j[0].get<std::string>(), j[1].get<std::string>(), j[2].get<std::string>()};
  if (!kinds.count(e.kind)) bad(path + "[0]", "unknown event kind", j[0]);
  return e;
}

ExpectedEvents events_of(const json& j, const std::string& path) {
  ExpectedEvents out{phase_of(j, path), {}};
  const json& list = j.at("events");
  for (std::size_t i = 0; i < list.size(); ++i)
    out.events.push_back(event_of(list[i], path + ".events[" + std::to_string(i) + "]"));
  return out;
}

ExpectedCounts counts_of(const json& j, const std::string& path) {
  return {phase_of(j, path), j.value("all_gathers", -1), j.value("reduce_scatters", -1)};
}

ExpectedUnsharded unsharded_of(const json& j, const std::string& path) {
  ExpectedUnsharded out{phase_of(j, path), j.at("modules").get<std::vector<std::string>>()};
  std::sort(out.modules.begin(), out.modules.end());
  return out;
}

MemoryBound memory_of(const json& j, const std::string& path) {
  MemoryBound m{phase_of(j, path), {}, j.value("max_ratio", 1.0)};
  const json& f = j.at("formula");
  m.formula.block = f.value("block", 0.0);
  m.formula.non_block = f.value("non_block", 0.0);
  m.formula.sharded = f.value("sharded", 0.0);
  m.formula.unsharded = f.value("unsharded", 0.0);
  m.formula.buffer_mb = f.value("buffer_mb", 16.0);
  m.formula.block_module = f.value("block_module", std::string("layers.0"));
  if (m.max_ratio <= 0) bad(path + ".max_ratio", "must be > 0", j.at("max_ratio"));
  return m;
}

template <class T, class Read>
std::vector<T> list_of(const json& j, const char* key, Read read) {
  std::vector<T> out;
  if (!j.contains(key)) return out;
  const json& list = j.at(key);
  if (!list.is_array()) bad(key, "expected an array", list);
  for (std::size_t i = 0; i < list.size(); ++i) out.push_back(read(list[i], std::string(key) + "[" + std::to_string(i) + "]"));
  return out;
}

}  // namespace

ExpectationCase case_from_json(const json& j, const std::string& name) {
  static const std::set<std::string> keys = {"upstream", "note",   "scenario",   "record",
                                             "events",   "counts", "unsharded",  "properties", "memory"};
  for (const auto& [key, value] : j.items())
    if (!keys.count(key)) bad(key, "unknown key", value);
  ExpectationCase c;
  c.name = name;
  c.upstream = j.at("upstream").get<std::string>();
  c.note = j.value("note", std::string());
  try {
    c.scenario = scenario_from_json(j.at("scenario"));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("scenario.") + e.what());
  }
  c.record = j.value("record", std::vector<std::string>{"unshard", "post_backward"});
  c.properties = j.value("properties", std::vector<std::string>{});
  c.events = list_of<ExpectedEvents>(j, "events", events_of);
  c.counts = list_of<ExpectedCounts>(j, "counts", counts_of);
  c.unsharded = list_of<ExpectedUnsharded>(j, "unsharded", unsharded_of);
  c.memory = list_of<MemoryBound>(j, "memory", memory_of);
  return c;
}

ExpectationCase load_case(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  try {
    return case_from_json(json::parse(in), std::filesystem::path(path).stem().string());
  } catch (const std::exception& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

}  // namespace shardfuzz::harness::expectations
