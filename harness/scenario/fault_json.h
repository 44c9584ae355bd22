// One fault as JSON: {"kind", "rank", then the kind's own keys}. The JSON stays flat (the files
// written before the plan was typed read unchanged); the reader takes only the keys of the kind.
// Internal to harness/scenario (the fault plan's codec, codecs.hpp, uses them).
#pragma once

#include "harness/scenario/fault_plan.h"

#include <nlohmann/json.hpp>

#include <string>

namespace shardfuzz::harness::fields_detail {

nlohmann::json fault_to_json(const FaultSpec& fault);
nlohmann::ordered_json fault_to_ordered_json(const FaultSpec& fault);
// Throws std::invalid_argument naming the JSON path of a bad key or value (under `path`).
FaultSpec fault_from_json(const nlohmann::json& v, const std::string& path);

}  // namespace shardfuzz::harness::fields_detail
