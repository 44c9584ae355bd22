// `shardfuzz import`.
#include "app/import_command.h"

#include "app/exit_codes.h"
#include "harness/import/fsdp_plan.h"
#include "harness/import/hf_config.h"
#include "harness/import/plan_table.h"
#include "harness/import/torchtitan_job.h"

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
  return r;
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
  cmd->add_option("--lora-rank", o.lora_rank, "LoRA adapters of this rank (PEFT's placement; base weights frozen)");
  cmd->add_option("--lora-targets", o.lora_targets, "the projections LoRA adapts: q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj")
      ->delimiter(',');
  cmd->add_flag("--json", o.json, "print the plan as JSON");
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
    return kExitOk;
  } catch (const std::invalid_argument& e) {
    err << "shardfuzz import: " << e.what() << "\n";
    return kExitUsage;
  }
}

}  // namespace shardfuzz::app
