// The scenario's values whose JSON form is their own: reshard_after_forward ("auto", true, false or
// an integer) and the fault plan (a flat object per fault whose "kind" says which keys it takes).
// Internal to harness/scenario (the field visitors use them); the scenario's own types are below it
// (scenario.h includes none of this, and this includes no scenario.h).
#pragma once

#include "harness/scenario/fault_json.h"
#include "harness/scenario/fault_plan.h"
#include "harness/scenario/field_visitors.hpp"
#include "harness/scenario/scenario_limits.h"
#include "runtime/fsdp/options.h"
#include "runtime/semantics/profile.h"

#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace shardfuzz::harness::fields_detail {

template <>
struct Codec<fsdp::ReshardAfterForward> {
  using R = fsdp::ReshardAfterForward;
  static constexpr bool omit_when_empty = false;
  static const char* type() { return "`\"auto\"`, `true`, `false` or integer"; }
  template <class Json>
  static Json write(const R& raf) {
    switch (raf.kind) {
      case R::Kind::Auto: return "auto";
      case R::Kind::True: return true;
      case R::Kind::False: return false;
      case R::Kind::Int: return raf.n;
    }
    return "?";
  }
  static R read(const json& v, const std::string& path) {
    if (v.is_boolean()) return v.get<bool>() ? R::yes() : R::no();
    if (v.is_string()) {
      if (v.get_ref<const std::string&>() == "auto") return R::automatic();
      reject(path, quoted(v.get_ref<const std::string&>()) +
                       " is not a reshard_after_forward value (\"auto\", true, false or an integer)");
    }
    if (v.is_number_integer()) return R::ranks(read_int(v, path));
    wrong_type(path, "\"auto\", true, false or an integer", v);
  }
  static void check(const std::string& path, const R& raf) {
    if (raf.kind != R::Kind::Auto && raf.kind != R::Kind::True && raf.kind != R::Kind::False && raf.kind != R::Kind::Int)
      reject(path, "unknown kind (\"auto\", true, false or an integer)");
    if (raf.kind == R::Kind::Int && raf.n < 1) reject(path, std::to_string(raf.n) + " must be at least 1");
  }
};

// The profile by its name; reading parses it (its errors name the unknown base or switch).
template <>
struct Codec<semantics::Profile> {
  static constexpr bool omit_when_empty = false;
  static const char* type() { return "string"; }
  template <class Json>
  static Json write(const semantics::Profile& p) {
    return p.name;
  }
  static semantics::Profile read(const json& v, const std::string& path) {
    const std::string& name = read_string(v, path);
    try {
      return semantics::Profile::named(name);
    } catch (const std::invalid_argument& e) {
      reject(path, e.what());
    }
  }
  static void check(const std::string&, const semantics::Profile&) {}
};

// One fault as JSON: fault_json.h.
template <>
struct Codec<std::vector<FaultSpec>> {
  static constexpr bool omit_when_empty = true;
  static const char* type() { return "array of faults"; }
  template <class Json>
  static Json write(const std::vector<FaultSpec>& faults) {
    Json out = Json::array();
    for (const FaultSpec& f : faults) {
      if constexpr (std::is_same_v<Json, nlohmann::ordered_json>) out.push_back(fault_to_ordered_json(f));
      else out.push_back(fault_to_json(f));
    }
    return out;
  }
  static std::vector<FaultSpec> read(const json& v, const std::string& path) {
    if (!v.is_array()) wrong_type(path, "an array of faults", v);
    if (v.size() > static_cast<std::size_t>(ScenarioLimits::kMaxFaults))
      reject(path, std::to_string(v.size()) + " faults, over the limit of " + std::to_string(ScenarioLimits::kMaxFaults));
    std::vector<FaultSpec> out;
    for (std::size_t i = 0; i < v.size(); ++i) out.push_back(fault_from_json(v[i], element(path, i)));
    return out;
  }
  // The rest (ranks, modules, steps) depends on the scenario: Scenario::validate.
  static void check(const std::string& path, const std::vector<FaultSpec>& faults) {
    if (faults.size() > static_cast<std::size_t>(ScenarioLimits::kMaxFaults))
      reject(path, std::to_string(faults.size()) + " faults, over the limit of " + std::to_string(ScenarioLimits::kMaxFaults));
  }
};

}  // namespace shardfuzz::harness::fields_detail
