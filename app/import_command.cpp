// `shardfuzz import`: flags into an ImportRequest, the pipeline (harness/import/import_pipeline.h)
// run step by step, and what each step returns printed.
#include "app/import_command.h"

#include "app/exit_codes.h"
#include "harness/files/write_file.h"
#include "harness/import/byte_size.h"
#include "harness/import/import_pipeline.h"
#include "harness/import/plan_table.h"
#include "harness/import/projection_report.h"
#include "harness/scenario/scenario_json.h"

#include <stdexcept>

namespace shardfuzz::app {
namespace {

namespace imp = harness::import;

// The flags as the pipeline's request. The device's memory is read only where it is used (--project).
imp::ImportRequest request_of(const ImportOptions& o) {
  imp::ImportRequest r;
  r.hf_config = o.hf_config;
  r.torchtitan = o.torchtitan;
  r.overrides = {o.world, o.dp_replicate, o.ep, o.reshard_after_forward, o.ac, o.storage_dtype, o.local_batch_size, o.seq_len};
  r.lora = {o.lora_rank, o.lora_targets};
  r.widths = o.widths;
  r.shape_only = o.shape_only;
  r.routing_skew = o.routing_skew;
  r.profile = o.profile;
  if (o.project && !o.device_memory.empty()) r.device_memory_bytes = imp::parse_byte_size(o.device_memory, "--device-memory");
  return r;
}

// The imported scenario's line, and the file it is written to when asked.
void print_scenario(const ImportOptions& o, const imp::ImportedScenario& imported, std::ostream& out) {
  out << "import: runs " << imported.execution << "\n";
  if (o.scenario_out.empty()) return;
  harness::write_file_atomically(o.scenario_out, harness::to_json_text(imported.scenario) + "\n");
  out << "import: wrote the scenario to " << o.scenario_out << " (shrink it: shardfuzz shrink " << o.scenario_out << ")\n";
}

// Runs the imported scenario (its real schedule) and prints its priced projection.
int project_and_print(const ImportOptions& o, const imp::ImportRequest& request, const imp::ImportedModel& imported,
                      const imp::FsdpPlan& plan, const imp::ImportedScenario& scenario, std::ostream& out, std::ostream& err) {
  const imp::ProjectedImport projected = imp::project_import(request, imported, plan, scenario);
  const harness::RunRecord& run = projected.run;
  if (!projected.projection) {
    err << "shardfuzz import: the imported scenario did not run: " << run.error << "\n";
    return kExitFindings;
  }
  const imp::Projection& p = *projected.projection;
  out << "import: projected under " << o.profile << " from the schedule of a " << scenario.scenario.blocks.size()
      << "-block, world " << scenario.scenario.world_size << (scenario.scenario.shape_only ? " shape-only" : "") << " run ("
      << static_cast<int>(run.seconds * 1000) << " ms)\n"
      << imp::projection_table(p);
  if (!o.html.empty()) {
    harness::write_file_atomically(o.html, imp::projection_html(p, imp::describe_model(imported.model),
                                                                 imp::describe_recipe(imported.recipe, plan), o.profile));
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
    const imp::ImportRequest request = request_of(o);
    const imp::ImportedModel imported = imp::read_import(request);
    const imp::FsdpPlan plan = imp::plan_import(request, imported);
    if (o.json) {
      out << imp::plan_json(imported.model, imported.recipe, plan).dump(1) << "\n";
      return kExitOk;
    }
    out << "import: " << imp::describe_model(imported.model) << "\nimport: " << imp::describe_recipe(imported.recipe, plan)
        << "\n" << imp::plan_table(plan);
    const imp::ImportedScenario scenario = imp::scenario_of(request, imported, plan);
    print_scenario(o, scenario, out);
    return o.project ? project_and_print(o, request, imported, plan, scenario, out, err) : kExitOk;
  } catch (const std::invalid_argument& e) {
    err << "shardfuzz import: " << e.what() << "\n";
    return kExitUsage;
  }
}

}  // namespace shardfuzz::app
