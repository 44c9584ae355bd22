// The FSDP plan of an imported model for people (a table: each group's mesh, parameters, the
// all-gather it costs and this rank's shard; runs of identical blocks folded into one row) and
// as JSON.
#pragma once

#include "harness/import/fsdp_plan.h"

#include <nlohmann/json.hpp>

#include <string>

namespace shardfuzz::harness::import {

std::string describe_model(const ModelShape& m);
std::string describe_recipe(const Recipe& r, const FsdpPlan& plan);
std::string plan_table(const FsdpPlan& plan);
nlohmann::json plan_json(const ModelShape& m, const Recipe& r, const FsdpPlan& plan);

// Bytes for people: "143,671,808 B (137.0 MiB)".
std::string bytes_text(int64_t bytes);

}  // namespace shardfuzz::harness::import
