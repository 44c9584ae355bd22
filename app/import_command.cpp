// `shardfuzz import`.
#include "app/import_command.h"

#include "app/exit_codes.h"
#include "harness/backends/threads/threads_backend.h"
#include "harness/files/write_file.h"
#include "harness/import/fsdp_plan.h"
#include "harness/import/imported_scenario.h"
#include "harness/import/projection.h"
#include "harness/import/projection_report.h"
#include "harness/scenario/scenario_json.h"
#include "harness/import/hf_config.h"
#include "harness/import/plan_table.h"
#include "harness/import/torchtitan_job.h"
#include "runtime/nn/routing_assumption.h"

#include <algorithm>
#include <stdexcept>

namespace shardfuzz::app {
namespace {

namespace imp = harness::import;

// The job's recipe (or the defaults), then each flag given over it.
imp::Recipe recipe_of(const ImportOptions& o) {
  imp::TorchtitanJob job;
  if (!o.torchtitan.empty()) job = imp::read_torchtitan_job(o.torchtitan);
  imp::Recipe r = job.recipe;
  if (o.world > 0) {
    if (job.world_known && o.world != r.world)
      throw std::invalid_argument("--world: " + std::to_string(o.world) + " but " + o.torchtitan + "'s data-parallel degrees make " +
                                  std::to_string(r.world));
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

// "80GiB", "80GB", "512MiB", or plain bytes.
int64_t bytes_of(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  const double scale = unit.empty() || unit == "B" ? 1.0 : unit == "KiB" ? 1024.0 : unit == "MiB" ? 1048576.0
                       : unit == "GiB" ? 1073741824.0 : unit == "KB" ? 1e3 : unit == "MB" ? 1e6 : unit == "GB" ? 1e9 : -1.0;
  if (used == 0 || scale < 0 || value <= 0 || value * scale > 1e18)
    throw std::invalid_argument("--device-memory: \"" + text + "\" is not a size (80GiB, 80GB, 512MiB, or bytes)");
  return static_cast<int64_t>(value * scale);
}

// Runs the imported scenario (the real schedule at small widths) and prints its priced projection.
int project_and_print(const ImportOptions& o, const imp::ModelShape& model, const imp::Recipe& recipe, const imp::FsdpPlan& plan,
                      std::ostream& out, std::ostream& err) {
  if (o.widths != "real" && o.widths != "small")
    throw std::invalid_argument("--widths: \"" + o.widths + "\" is not real or small");
  if (o.shape_only && o.widths == "small") throw std::invalid_argument("--shape-only: runs at the real widths, not --widths small");
  if (o.routing_skew < 0 || o.routing_skew > 16)
    throw std::invalid_argument("--routing-skew: " + std::to_string(o.routing_skew) + " outside [0, 16]");
  imp::ImportedScenario imported = imp::imported_scenario(model, recipe, plan, o.profile,
                                                          o.widths == "small" ? imp::Widths::Small : imp::Widths::Real, o.shape_only);
  if (imported.scenario.shape_only && o.routing_skew > 0) {
    imported.scenario.shape_only->routing_skew = o.routing_skew;
    imported.execution = imported.execution.substr(0, imported.execution.rfind("; routing ")) + "; routing " +
                         nn::RoutingAssumption{o.routing_skew}.describe();
  }
  out << "import: runs " << imported.execution << "\n";
  if (!o.scenario_out.empty()) {
    harness::write_file_atomically(o.scenario_out, harness::to_json_text(imported.scenario) + "\n");
    out << "import: wrote the scenario to " << o.scenario_out << " (shrink it: shardfuzz shrink " << o.scenario_out << ")\n";
  }
  if (!o.project) return kExitOk;
  const harness::RunRecord run = harness::run_threads(imported.scenario);
  if (!run.ok()) {
    err << "shardfuzz import: the imported scenario did not run: " << run.error << "\n";
    return kExitFindings;
  }
  const imp::Projection p = imp::project(run, imported, plan, model, recipe, o.device_memory.empty() ? 0 : bytes_of(o.device_memory));
  out << "import: projected under " << o.profile << " from the schedule of a " << imported.scenario.blocks.size() << "-block, world "
      << imported.scenario.world_size << (imported.scenario.shape_only ? " shape-only" : "") << " run ("
      << static_cast<int>(run.seconds * 1000) << " ms)\n"
      << imp::projection_table(p);
  if (!o.html.empty()) {
    harness::write_file_atomically(o.html, imp::projection_html(p, imp::describe_model(model), imp::describe_recipe(recipe, plan), o.profile));
    out << "import: wrote " << o.html << "\n";
  }
  return p.out_of_memory ? kExitFindings : kExitOk;
}

}  // namespace

CLI::App* add_import_command(CLI::App& app, ImportOptions& o) {
  CLI::App* cmd = app.add_subcommand("import", "Read a production model (HF config.json) and its recipe (torchtitan TOML) "
                                               "into the FSDP plan torchtitan builds, with every group's bytes");
  cmd->add_option("--hf", o.hf_config, "a Hugging Face config.json (qwen3_moe, qwen2_moe, mixtral, deepseek_v3, llama, qwen3)")
      ->required();
  cmd->add_option("--torchtitan", o.torchtitan, "a torchtitan job TOML: [parallelism], [activation_checkpoint], [training]");
  cmd->add_option("--world", o.world, "ranks in all (default: the job's data-parallel degrees, else 1)");
  cmd->add_option("--dp-replicate", o.dp_replicate, "HSDP replicas (data_parallel_replicate_degree)");
  cmd->add_option("--ep", o.ep, "expert parallelism (expert_parallel_degree)");
  cmd->add_option("--reshard-after-forward", o.reshard_after_forward, "torchtitan's policy: default, always, never");
  cmd->add_option("--ac", o.ac, "activation checkpointing: none, full, selective");
  cmd->add_option("--storage-dtype", o.storage_dtype, "what the sharded parameters are held in (torchtitan: float32; a "
                                                       "checkpoint loaded as is: bfloat16)");
  cmd->add_option("--local-batch-size", o.local_batch_size, "sequences per rank per step (the projection's activations)");
  cmd->add_option("--seq-len", o.seq_len, "tokens per sequence");
  cmd->add_option("--lora-rank", o.lora_rank, "LoRA adapters of this rank (PEFT's placement; base weights frozen)");
  cmd->add_option("--lora-targets", o.lora_targets, "the projections LoRA adapts: q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj")
      ->delimiter(',');
  cmd->add_flag("--json", o.json, "print the plan as JSON");
  cmd->add_option("--widths", o.widths, "real: the model's widths, run shape-only (meta device) when a run with data could "
                                        "not hold them; small: the real structure at small widths (shrinks in seconds)")
      ->capture_default_str();
  cmd->add_flag("--shape-only", o.shape_only, "run shape-only at the real widths even where data would fit");
  cmd->add_option("--routing-skew", o.routing_skew, "shape-only: global expert e receives a share 1/(e+1)^S of the tokens "
                                                    "(0: balanced)");
  cmd->add_flag("--project", o.project, "run the imported scenario (its real schedule, see --widths) and project each "
                                         "layer's backward memory with the plan's real bytes");
  cmd->add_option("--profile", o.profile, "with --project: the semantics profile (torch-2.9, torch-2.11, strict, ...)")
      ->capture_default_str();
  cmd->add_option("--device-memory", o.device_memory, "with --project: the device's memory (80GiB): name the layer that runs out");
  cmd->add_option("--html", o.html, "with --project: write the projection's HTML report (a stacked plot per layer)");
  cmd->add_option("--scenario-out", o.scenario_out, "write the imported scenario (for shardfuzz shrink, run, export)");
  return cmd;
}

int run_import(const ImportOptions& o, std::ostream& out, std::ostream& err) {
  try {
    const imp::ModelShape model = imp::read_hf_config(o.hf_config);
    const imp::Recipe recipe = recipe_of(o);
    imp::LoraPlan lora{o.lora_rank, o.lora_targets};
    if (lora.rank < 0 || lora.rank > 4096) throw std::invalid_argument("--lora-rank: " + std::to_string(lora.rank) + " outside [0, 4096]");
    for (const auto& t : lora.targets) {
      const auto& names = imp::lora_target_names();
      if (std::find(names.begin(), names.end(), t) == names.end())
        throw std::invalid_argument("--lora-targets: \"" + t + "\" is not one of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj");
    }
    if (lora.rank > 0 && lora.targets.empty()) throw std::invalid_argument("--lora-rank: no --lora-targets to adapt");
    const imp::FsdpPlan plan = imp::plan_fsdp(model, recipe, lora);
    if (o.json) {
      out << imp::plan_json(model, recipe, plan).dump(1) << "\n";
      return kExitOk;
    }
    out << "import: " << imp::describe_model(model) << "\nimport: " << imp::describe_recipe(recipe, plan) << "\n"
        << imp::plan_table(plan);
    return project_and_print(o, model, recipe, plan, out, err);
  } catch (const std::invalid_argument& e) {
    err << "shardfuzz import: " << e.what() << "\n";
    return kExitUsage;
  }
}

}  // namespace shardfuzz::app
