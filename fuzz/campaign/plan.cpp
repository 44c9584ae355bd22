// The plan's visitors: JSON both ways, range checks, and merge's comparison.
#include "fuzz/campaign/plan.h"

#include "fuzz/campaign/limits_codec.hpp"
#include "harness/scenario/fault_plan.h"
#include "runtime/semantics/profile.h"

#include <algorithm>
#include <stdexcept>


namespace shardfuzz::fuzz {
namespace {

namespace fd = harness::fields_detail;
using nlohmann::json;

// Checks each field of a plan record against what it allows, named by flag or by path.
struct PlanChecker {
  const PlanNaming& naming;
  std::string prefix;  // the JSON path of the record being visited
  template <class T>
  void operator()(const char* key, const T& value, const harness::Allowed& allowed, const char* flag, PlanRole) {
    const std::string path = naming.flags && *flag ? flag : naming.where + prefix + key;
    if constexpr (harness::is_record<T>::value) {
      PlanChecker inner{naming, prefix + key + "."};
      harness::Fields<T>::list(value, inner);
    } else {
      fd::check_value(value, path, allowed);
    }
  }
};

// Every field's JSON value under its dotted key, for the fields with the role asked.
struct RoleValues {
  PlanRole role;
  std::string prefix;
  std::vector<std::pair<std::string, json>> values;
  template <class T>
  void operator()(const char* key, const T& value, const harness::Allowed&, const char*, PlanRole r) {
    if constexpr (harness::is_record<T>::value) {
      RoleValues inner{role, prefix + key + ".", {}};
      harness::Fields<T>::list(value, inner);
      values.insert(values.end(), inner.values.begin(), inner.values.end());
    } else if (r == role) {
      json j;
      if constexpr (fd::is_optional<T>::value) j = value ? fd::write_value<json>(*value) : json(nullptr);
      else j = fd::write_value<json>(value);
      values.emplace_back(prefix + key, std::move(j));
    }
  }
};

// The rules that tie a field to the rest of the program (names it must know).
void check_rules(const CampaignPlan& p, const PlanNaming& naming) {
  const auto name = [&](const char* flag, const std::string& key) { return naming.flags ? flag : naming.where + key; };
  if (p.shard_index >= p.shard_count)
    throw std::invalid_argument(name("--shard", "shard_index") + ": " + std::to_string(p.shard_index) +
                                " is not an index I in [0, N) of N = " + std::to_string(p.shard_count) + " shards");
  if (!p.gen.profile.empty()) {
    try {
      semantics::Profile::named(p.gen.profile);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(name("--profile", "gen.profile") + ": " + e.what());
    }
  }
  const auto& kinds = harness::fault_kinds();
  for (const auto& k : p.gen.fault_kinds) {
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end())
      throw std::invalid_argument(name("--fault-kinds", "gen.fault_kinds") + ": '" + k + "' is not a fault kind");
    if (k == harness::name_of(harness::CollectiveFault::Kind::Abort) && !p.isolation)
      throw std::invalid_argument(name("--fault-kinds", "gen.fault_kinds") +
                                  ": abort ends the process; it needs isolation (drop --no-isolation)");
  }
}

}  // namespace

void check_plan(const CampaignPlan& plan, const PlanNaming& naming) {
  PlanChecker checker{naming, ""};
  harness::Fields<CampaignPlan>::list(plan, checker);
  check_rules(plan, naming);
}

json plan_to_json(const CampaignPlan& plan) { return fd::write_record<json>(plan); }

CampaignPlan plan_from_json(const json& j, const std::string& path) {
  CampaignPlan plan = fd::read_record<CampaignPlan>(j, path);
  check_plan(plan, {false, path.empty() ? "" : path + "."});
  return plan;
}

std::string plan_difference(const CampaignPlan& a, const CampaignPlan& b) {
  RoleValues of_a{PlanRole::Draws, "", {}}, of_b{PlanRole::Draws, "", {}};
  harness::Fields<CampaignPlan>::list(a, of_a);
  harness::Fields<CampaignPlan>::list(b, of_b);
  for (std::size_t i = 0; i < of_a.values.size(); ++i)
    if (of_a.values[i].second != of_b.values[i].second)
      return of_a.values[i].first + ": " + of_b.values[i].second.dump() + " vs " + of_a.values[i].second.dump();
  return "";
}

}  // namespace shardfuzz::fuzz
