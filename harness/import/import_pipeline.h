// `shardfuzz import` as a pipeline of plain steps: an ImportRequest (what the command line asked,
// as data) is read into the model and its recipe (read_import), planned into the FSDP tree
// torchtitan builds (plan_import), built into the scenario that runs it (scenario_of: whole, the
// routing assumption included) and, when asked, run and projected (project_import). The command
// (app/import_command.cpp) only turns flags into a request and prints what each step returns.
//
// Every step throws std::invalid_argument naming the flag or field at fault ("--lora-rank: 5000
// outside [0, 4096]", "--world: 8 but job.toml's data-parallel degrees make 16"), so the caller can
// report it as a usage error.
#pragma once

#include "harness/import/fsdp_plan.h"
#include "harness/import/imported_scenario.h"
#include "harness/import/model_shape.h"
#include "harness/import/module_params.h"
#include "harness/import/projection.h"
#include "harness/import/recipe.h"
#include "harness/run/run_record.h"

#include <cstdint>
#include <optional>
#include <string>

namespace shardfuzz::harness::import {

// The recipe's fields a request sets over the job's (or the defaults); 0 or "": keep the job's.
struct RecipeOverrides {
  int world = 0;  // a job that fixes its world (both data-parallel degrees) must agree
  int dp_replicate = 0;
  int ep = 0;
  std::string reshard_after_forward;  // default, always, never
  std::string ac;                     // none, full, selective
  std::string storage_dtype;
  int64_t local_batch_size = 0;
  int64_t seq_len = 0;
};

struct ImportRequest {
  std::string hf_config;   // a Hugging Face config.json
  std::string torchtitan;  // a torchtitan job TOML ("": the overrides over the defaults)
  RecipeOverrides overrides;
  LoraPlan lora;           // PEFT adapters (rank 0: none); checked against lora_target_names()
  std::string widths = "real";  // "real" (shape-only when a run with data cannot hold them) or "small"
  bool shape_only = false;      // a shape-only run at the real widths even where data would fit
  double routing_skew = 0.0;    // shape-only: global expert e receives a share 1/(e+1)^skew, in [0, 16]
  std::string profile = "torch-2.11";
  int64_t device_memory_bytes = 0;  // the projection names the layer that runs out of it (0: none)
};

// The model and the recipe it is trained with, as the request reads them.
struct ImportedModel {
  ModelShape model;
  Recipe recipe;
};

// Reads the config and the job, then sets the request's overrides over the job's recipe.
ImportedModel read_import(const ImportRequest& request);
// Checks the LoRA plan and builds the FSDP tree with every group's bytes.
FsdpPlan plan_import(const ImportRequest& request, const ImportedModel& imported);
// Checks the widths, shape-only and routing-skew choices and builds the scenario whole.
ImportedScenario scenario_of(const ImportRequest& request, const ImportedModel& imported, const FsdpPlan& plan);

// The imported scenario's run, and its projection when the run went through.
struct ProjectedImport {
  RunRecord run;
  std::optional<Projection> projection;  // empty: the run failed (run.error says why)
};
ProjectedImport project_import(const ImportRequest& request, const ImportedModel& imported, const FsdpPlan& plan,
                               const ImportedScenario& scenario);

}  // namespace shardfuzz::harness::import
