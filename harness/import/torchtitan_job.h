// Reading a torchtitan job TOML's parallelism and memory recipe: [parallelism] (data-parallel
// replicate and shard degrees, expert parallelism, fsdp_reshard_after_forward), [activation_checkpoint]
// (mode, selective_ac_option), [training] (mixed precision dtypes, local batch size, sequence
// length) and [model] (name, flavor). Keys it does not model are left alone; tensor, context and
// pipeline parallelism above 1 are refused, naming the key.
#pragma once

#include "harness/import/recipe.h"

#include <string>

namespace shardfuzz::harness::import {

struct TorchtitanJob {
  Recipe recipe;          // world: data_parallel_replicate x data_parallel_shard when both are set, else 1
  bool world_known = false;  // both degrees were set (no -1): the job fixes the world
  std::string model_name;    // [model] name, "" when absent
  std::string flavor;        // [model] flavor
};

// Throws std::invalid_argument naming the file, the table and the key
// ("job.toml: parallelism.expert_parallel_degree: \"8\" is not an integer"), or the line of a
// TOML syntax error.
TorchtitanJob torchtitan_job_from_toml(const std::string& text, const std::string& where = "job.toml");
TorchtitanJob read_torchtitan_job(const std::string& path);

}  // namespace shardfuzz::harness::import
