// The scenarios of the recorded FSDP2 traces (tests/conformance/recorded/record.py) as Scenarios: the
// same model (D=16, E=2 experts, H=8, 4 tokens, one input for every rank and step, loss = sum of
// the output), the same wrapping (checkpoint, nested experts, block, out, root) and explicit
// prefetch lists, forward/backward only.
#pragma once

#include "harness/scenario/scenario.h"

#include <nlohmann/json.hpp>

namespace shardfuzz::harness {

// `trace`: a whole recorded file ({"scenario", "profile", "world_size", "steps", ...}). Rejects
// unknown scenario keys and bad values, naming the JSON path ("scenario.blocks").
Scenario scenario_from_trace(const nlohmann::json& trace);

}  // namespace shardfuzz::harness
