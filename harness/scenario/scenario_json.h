// A Scenario as JSON ("schema": 1) — the format of reproducers/*.json and of `shardfuzz run` —
// and back. Reading is strict and hostile-input safe: unknown or duplicate keys, wrong types and
// out-of-range values are rejected with the JSON path of the first bad value; every error is a
// std::invalid_argument (bad content) or std::runtime_error (unreadable file). docs/scenario-format.md
// describes the format.
#pragma once

#include "harness/scenario/scenario.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace shardfuzz::harness {

// Reading limits, checked before the text is parsed or while it is: a scenario is a few KiB.
struct ScenarioTextLimits {
  static constexpr std::size_t kMaxBytes = std::size_t{1} << 20;  // the whole text (or file)
  static constexpr int kMaxDepth = 32;                             // nested arrays/objects
};

// Every field, defaults included, so that the text is the whole scenario.
nlohmann::json to_json(const Scenario& scenario);
// A block kind as the JSON (and the torch export) spells it: "moe", "mlp", "routed_moe".
const char* block_kind_name(BlockSpec::Kind kind);
// The same, "schema" first and then the fields in declaration order, 2-space indent, no trailing
// newline (as json::dump; writers add it). Never throws: invalid UTF-8 in `name` becomes U+FFFD.
std::string to_json_text(const Scenario& scenario);

// Reads and validates (Scenario::validate) a scenario; missing optional keys take the struct's
// defaults, "schema" is required. Throws std::invalid_argument naming the JSON path.
Scenario scenario_from_json(const nlohmann::json& json);
// Parses JSON text, rejecting duplicate keys and nesting deeper than kMaxDepth; syntax errors
// name the byte offset. Throws std::invalid_argument.
Scenario parse_scenario(const std::string& text);
// Reads a file and parses it; an unreadable file throws std::runtime_error, bad content
// std::invalid_argument; both messages start with the file's path.
Scenario load_scenario(const std::string& path);

}  // namespace shardfuzz::harness
