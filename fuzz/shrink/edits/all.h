// Every structural edit, by concept (one file each); catalogue.cpp orders them. Each returns the
// raw candidates it makes of a scenario, biggest first: catalogue.cpp repairs and filters them.
#pragma once

#include "harness/scenario/scenario.h"

#include <vector>

namespace shardfuzz::fuzz::shrinking::edits {

using Candidates = std::vector<harness::Scenario>;
using harness::Scenario;

// blocks.cpp
Candidates drop_blocks(const Scenario& sc);
// faults.cpp
Candidates drop_a_fault(const Scenario& sc);
Candidates simplify_a_fault(const Scenario& sc);
// schedule.cpp
Candidates canonical_schedule(const Scenario& sc);
Candidates fewer_switches(const Scenario& sc);
// world.cpp
Candidates smaller_world(const Scenario& sc);
Candidates no_experts_mesh(const Scenario& sc);
// groups.cpp
Candidates drop_a_group(const Scenario& sc);
Candidates default_placement_options(const Scenario& sc);
// prefetch.cpp
Candidates drop_a_prefetch_list(const Scenario& sc);
Candidates drop_a_prefetch_entry(const Scenario& sc);
// dims.cpp
Candidates smaller_dims(const Scenario& sc);
Candidates top_k_1(const Scenario& sc);
Candidates one_head(const Scenario& sc);
// steps.cpp
Candidates fewer_steps(const Scenario& sc);
Candidates plainer_step(const Scenario& sc);
Candidates default_optimizer(const Scenario& sc);
// precision.cpp
Candidates no_mixed_precision(const Scenario& sc);
Candidates float32_model(const Scenario& sc);
// features.cpp
Candidates plainer_model(const Scenario& sc);
Candidates with_data(const Scenario& sc);
Candidates ac_off(const Scenario& sc);
Candidates reentrant_to_non_reentrant(const Scenario& sc);
Candidates drop_a_lora_adapter(const Scenario& sc);
Candidates ac_inside_hooks(const Scenario& sc);
Candidates no_attention(const Scenario& sc);
Candidates no_norms(const Scenario& sc);
Candidates grad_on(const Scenario& sc);
Candidates selective_to_non_reentrant(const Scenario& sc);
Candidates routed_to_dense_moe(const Scenario& sc);
Candidates unfreeze(const Scenario& sc);
Candidates ungate(const Scenario& sc);
Candidates moe_to_mlp(const Scenario& sc);

}  // namespace shardfuzz::fuzz::shrinking::edits
