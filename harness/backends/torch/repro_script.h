// The torch export: a Scenario as a self-contained Python program on PyTorch's own fully_shard.
// The program is the prelude (harness/backends/torch/repro_prelude.py: the model zoo in torch.nn, an FSDP2
// event recorder reading FSDPParamGroup's state, the run loop, the LEAK/PASS verdict) followed by
// straight-line code for this scenario: the model, checkpoint wrappers, every fully_shard call with
// its mesh and options, the explicit prefetch lists, and the run plan. Under torch-2.9/2.7 profiles
// the program re-creates the pre-PR-#164009 post_forward from the installed source (documented in
// the script), so the seed leak shows on torch 2.11.
#pragma once

#include "harness/scenario/scenario.h"

#include <string>

namespace shardfuzz::harness {

// Throws std::invalid_argument naming the field the export cannot express (a fault plan).
// `note` goes into the script's docstring (the finding's message, the command that found it).
std::string torch_repro_script(const Scenario& scenario, const std::string& note = "");

// The module at `path` as a Python expression over `model` ("layers.2.moe.experts" ->
// "model.layers[2].moe.experts", "" -> "model").
std::string python_module_expr(const std::string& path);

}  // namespace shardfuzz::harness
