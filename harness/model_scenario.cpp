// Parsing of the traces' scenario objects.
#include "harness/model_scenario.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace shardfuzz::harness {
namespace {

template <typename T>
T field(const nlohmann::json& j, const char* key, const std::string& kind) {
  const nlohmann::json& v = j.at(key);
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument(std::string("scenario.") + key + ": expected " + kind + ", got " + v.dump());
  }
}

}  // namespace

ModelScenario ModelScenario::from_trace_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("scenario: expected an object, got " + j.dump());
  static const std::set<std::string> known = {"name", "blocks", "ac", "gated", "lora", "nested", "wrap_out",
                                              "explicit", "frozen_block0", "block_reshard_after_forward", "steps"};
  for (const auto& [key, value] : j.items())
    if (!known.count(key)) throw std::invalid_argument("scenario." + key + ": unknown key");
  ModelScenario s;
  s.name = j.contains("name") ? field<std::string>(j, "name", "a string") : "";
  s.blocks = field<int>(j, "blocks", "an integer");
  if (s.blocks < 1 || s.blocks > 64)
    throw std::invalid_argument("scenario.blocks: " + std::to_string(s.blocks) + " outside [1, 64]");
  s.ac = ac::checkpoint_mode_from_string(field<std::string>(j, "ac", "a string"));
  if (j.contains("gated")) s.gated = field<bool>(j, "gated", "a boolean");
  if (j.contains("lora") && field<bool>(j, "lora", "a boolean"))
    throw std::invalid_argument("scenario.lora: LoRA layers are not modelled by the native runtime yet");
  if (j.contains("nested")) {
    s.nested = field<std::vector<int>>(j, "nested", "a list of block indices");
    for (int b : *s.nested)
      if (b < 0 || b >= s.blocks)
        throw std::invalid_argument("scenario.nested: block " + std::to_string(b) + " out of range");
  }
  if (j.contains("wrap_out")) s.wrap_out = field<bool>(j, "wrap_out", "a boolean");
  if (j.contains("explicit")) {
    s.explicit_prefetch = field<std::string>(j, "explicit", "a string");
    if (s.explicit_prefetch != "torchtitan" && s.explicit_prefetch != "empty" && s.explicit_prefetch != "self_experts")
      throw std::invalid_argument("scenario.explicit: unknown value '" + s.explicit_prefetch +
                                  "' (torchtitan, empty, self_experts)");
  }
  if (j.contains("frozen_block0")) s.frozen_block0 = field<bool>(j, "frozen_block0", "a boolean");
  if (j.contains("block_reshard_after_forward"))
    s.block_reshard_after_forward = field<bool>(j, "block_reshard_after_forward", "a boolean");
  if (j.contains("steps")) s.steps = field<int>(j, "steps", "an integer");
  if (s.steps < 1 || s.steps > 100)
    throw std::invalid_argument("scenario.steps: " + std::to_string(s.steps) + " outside [1, 100]");
  return s;
}

bool ModelScenario::is_nested(int block) const {
  return moe && (!nested || std::find(nested->begin(), nested->end(), block) != nested->end());
}

bool ModelScenario::is_checkpointed(int block) const {
  return ac != ac::CheckpointMode::None && ac::selected_for_checkpoint(block, ac_every);
}

}  // namespace shardfuzz::harness
