// The catalogue of structural edits, in the order the greedy descent tries their candidates:
// the biggest simplifications first, so that later edits work on an already small scenario.
#include "fuzz/gen/repair.h"
#include "fuzz/shrink/edits.h"
#include "fuzz/shrink/edits/all.h"
#include "harness/scenario/scenario_json.h"

#include <algorithm>
#include <set>
#include <string>

namespace shardfuzz::fuzz::shrinking {

namespace {

bool validates(const harness::Scenario& sc) {
  try {
    sc.validate();
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::vector<Edit> catalogue(const StructuralShrinkOptions& options) {
  std::vector<Edit> all = {
      {"drop blocks", edits::drop_blocks},
      {"drop a fault", edits::drop_a_fault},
      {"simplify a fault", edits::simplify_a_fault},
      {"canonical schedule", edits::canonical_schedule},
      {"fewer switches", edits::fewer_switches},
      {"smaller world", edits::smaller_world},
      {"drop a group", edits::drop_a_group},
      {"AC off", edits::ac_off},
      {"reentrant AC to non_reentrant", edits::reentrant_to_non_reentrant},
      {"drop a prefetch list", edits::drop_a_prefetch_list},
      {"drop a prefetch entry", edits::drop_a_prefetch_entry},
      {"no experts mesh", edits::no_experts_mesh},
      {"default placement options", edits::default_placement_options},
      {"smaller dims", edits::smaller_dims},
      {"with data", edits::with_data},
      {"fewer steps", edits::fewer_steps},
      {"plainer step", edits::plainer_step},
      {"plainer model", edits::plainer_model},
      {"no mixed precision", edits::no_mixed_precision},
      {"float32 model", edits::float32_model},
      {"top-k 1", edits::top_k_1},
      {"one head", edits::one_head},
      {"drop a LoRA adapter", edits::drop_a_lora_adapter},
      {"AC inside the hooks", edits::ac_inside_hooks},
      {"no attention", edits::no_attention},
      {"no norms", edits::no_norms},
      {"grad on", edits::grad_on},
      {"selective AC to non_reentrant", edits::selective_to_non_reentrant},
      {"routed MoE to dense", edits::routed_to_dense_moe},
      {"unfreeze", edits::unfreeze},
      {"ungate", edits::ungate},
      {"MoE to MLP", edits::moe_to_mlp},
      {"default optimizer", edits::default_optimizer},
  };
  if (options.keep_world)
    all.erase(std::remove_if(all.begin(), all.end(), [](const Edit& e) { return e.candidates == edits::smaller_world; }),
              all.end());
  return all;
}

std::vector<Candidate<harness::Scenario>> structural_candidates(const harness::Scenario& scenario,
                                                                const StructuralShrinkOptions& options) {
  std::set<std::string> seen = {harness::to_json_text(scenario)};
  std::vector<Candidate<harness::Scenario>> out;
  for (const Edit& edit : catalogue(options))
    for (harness::Scenario& raw : edit.candidates(scenario)) {
      harness::Scenario repaired = gen::repair(std::move(raw));
      if (!validates(repaired) || !seen.insert(harness::to_json_text(repaired)).second) continue;
      out.push_back({std::move(repaired), edit.name});
    }
  return out;
}

}  // namespace shardfuzz::fuzz::shrinking
