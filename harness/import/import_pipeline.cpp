// The import pipeline's steps (import_pipeline.h).
#include "harness/import/import_pipeline.h"

#include "harness/backends/threads/threads_backend.h"
#include "harness/import/hf_config.h"
#include "harness/import/torchtitan_job.h"

#include <algorithm>
#include <stdexcept>

namespace shardfuzz::harness::import {
namespace {

// The job's recipe (or the defaults), then each override over it.
Recipe recipe_of(const ImportRequest& request) {
  TorchtitanJob job;
  if (!request.torchtitan.empty()) job = read_torchtitan_job(request.torchtitan);
  Recipe r = job.recipe;
  const RecipeOverrides& o = request.overrides;
  if (o.world > 0) {
    if (job.world_known && o.world != r.world)
      throw std::invalid_argument("--world: " + std::to_string(o.world) + " but " + request.torchtitan +
                                  "'s data-parallel degrees make " + std::to_string(r.world));
    r.world = o.world;
  }
  if (o.dp_replicate > 0) r.dp_replicate = o.dp_replicate;
  if (o.ep > 0) r.ep = o.ep;
  if (!o.reshard_after_forward.empty()) r.reshard_after_forward = o.reshard_after_forward;
  if (!o.ac.empty()) r.ac = o.ac;
  if (!o.storage_dtype.empty()) r.storage_dtype = o.storage_dtype;
  if (o.local_batch_size > 0) r.local_batch_size = o.local_batch_size;
  if (o.seq_len > 0) r.seq_len = o.seq_len;
  return r;
}

void check_lora(const LoraPlan& lora) {
  if (lora.rank < 0 || lora.rank > 4096) throw std::invalid_argument("--lora-rank: " + std::to_string(lora.rank) + " outside [0, 4096]");
  const auto& names = lora_target_names();
  for (const auto& t : lora.targets)
    if (std::find(names.begin(), names.end(), t) == names.end())
      throw std::invalid_argument("--lora-targets: \"" + t + "\" is not one of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj");
  if (lora.rank > 0 && lora.targets.empty()) throw std::invalid_argument("--lora-rank: no --lora-targets to adapt");
}

Widths widths_of(const ImportRequest& request) {
  if (request.widths != "real" && request.widths != "small")
    throw std::invalid_argument("--widths: \"" + request.widths + "\" is not real or small");
  if (request.shape_only && request.widths == "small")
    throw std::invalid_argument("--shape-only: runs at the real widths, not --widths small");
  return request.widths == "small" ? Widths::Small : Widths::Real;
}

}  // namespace

ImportedModel read_import(const ImportRequest& request) {
  ImportedModel out;
  out.model = read_hf_config(request.hf_config);
  out.recipe = recipe_of(request);
  return out;
}

FsdpPlan plan_import(const ImportRequest& request, const ImportedModel& imported) {
  check_lora(request.lora);
  return plan_fsdp(imported.model, imported.recipe, request.lora);
}

ImportedScenario scenario_of(const ImportRequest& request, const ImportedModel& imported, const FsdpPlan& plan) {
  const Widths widths = widths_of(request);
  if (!(request.routing_skew >= 0 && request.routing_skew <= 16))  // NaN too
    throw std::invalid_argument("--routing-skew: " + std::to_string(request.routing_skew) + " outside [0, 16]");
  return imported_scenario(imported.model, imported.recipe, plan, request.profile, widths, request.shape_only,
                           request.routing_skew);
}

ProjectedImport project_import(const ImportRequest& request, const ImportedModel& imported, const FsdpPlan& plan,
                               const ImportedScenario& scenario) {
  ProjectedImport out;
  out.run = run_threads(scenario.scenario);
  if (out.run.ok())
    out.projection = project(out.run, scenario, plan, imported.model, imported.recipe, request.device_memory_bytes);
  return out;
}

}  // namespace shardfuzz::harness::import
