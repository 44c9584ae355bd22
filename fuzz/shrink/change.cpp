// describe_change (edits.h): a short diff of two scenarios' JSON, for progress lines.
#include "fuzz/shrink/edits.h"
#include "harness/scenario/scenario_json.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace shardfuzz::fuzz::shrinking {

namespace {

using nlohmann::json;

constexpr std::size_t kMostParts = 3;

std::string scalar(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Appends what changed under `path` from `a` to `b`: a value (`path a -> b`), a count
// (`path 4 -> 3`) for lists and the fully_shard map when they grew or shrank, or else the changes
// of their members (a member removed or added, by name).
void diff(const std::string& path, const json& a, const json& b, std::vector<std::string>& parts) {
  if (a == b) return;
  const bool both_arrays = a.is_array() && b.is_array(), both_objects = a.is_object() && b.is_object();
  if ((both_arrays || (both_objects && path == "fully_shard")) && a.size() != b.size()) {
    parts.push_back(path + " " + std::to_string(a.size()) + " -> " + std::to_string(b.size()));
  } else if (both_arrays) {
    for (std::size_t i = 0; i < a.size(); ++i) diff(path + "[" + std::to_string(i) + "]", a[i], b[i], parts);
  } else if (both_objects) {
    const bool keyed = path == "fully_shard";  // its keys are module paths, with dots
    for (auto it = a.begin(); it != a.end(); ++it) {
      const std::string member = keyed ? path + "[" + it.key() + "]" : (path.empty() ? "" : path + ".") + it.key();
      if (!b.contains(it.key())) parts.push_back(member + " removed");
      else diff(member, it.value(), b.at(it.key()), parts);
    }
    for (auto it = b.begin(); it != b.end(); ++it)
      if (!a.contains(it.key())) parts.push_back((path.empty() ? "" : path + ".") + it.key() + " added");
  } else if (b.is_null() || b.is_object() || b.is_array()) {
    parts.push_back(path + (b.is_null() ? " removed" : " changed"));
  } else {
    parts.push_back(path + " " + (a.is_null() ? std::string("unset") : scalar(a)) + " -> " + scalar(b));
  }
}

}  // namespace

std::string describe_change(const harness::Scenario& before, const harness::Scenario& after) {
  std::vector<std::string> parts;
  diff("", harness::to_json(before), harness::to_json(after), parts);
  if (parts.empty()) return "no change";
  std::string out;
  for (std::size_t i = 0; i < parts.size() && i < kMostParts; ++i) out += (i ? ", " : "") + parts[i];
  if (parts.size() > kMostParts) out += ", and " + std::to_string(parts.size() - kMostParts) + " more";
  return out;
}

}  // namespace shardfuzz::fuzz::shrinking
