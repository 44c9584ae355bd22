// ScenarioLimits on their own: the field codecs (codecs.hpp) check them without scenario.h.
#pragma once

#include <cstdint>

namespace shardfuzz::harness {

// Limits a scenario must stay within (validation; the generator stays well inside).
struct ScenarioLimits {
  static constexpr int kMaxWorld = 64;
  static constexpr int kMaxBlocks = 128;
  static constexpr int kMaxSteps = 1000;
  static constexpr int kMaxMicroBatches = 64;
  static constexpr int kMaxForwardsPerBackward = 16;
  static constexpr int64_t kMaxDim = 1 << 16;
  static constexpr int64_t kMaxVocab = 1 << 20;   // real vocabularies (Qwen3: 151,936) for shape-only runs
  static constexpr int64_t kMaxTokens = 1 << 20;  // local batch x sequence of a real recipe, shape-only
  // A shape-only scenario holds no data, so its sizes are bounded by the arithmetic only (a 1 PiB
  // model before sharding, 2^50 activation elements).
  static constexpr int64_t kMaxShapeOnlyBytes = int64_t{1} << 50;
  static constexpr int64_t kMaxParameterBytes = int64_t{1} << 30;     // per rank, before sharding
  // tokens x max(dim, hidden x experts, tokens x heads)
  static constexpr int64_t kMaxActivationElements = int64_t{1} << 28;
  static constexpr int kMaxFaults = 16;
  static constexpr int kMaxScheduleSwitches = 4096;
  static constexpr int64_t kMaxScheduleDecision = int64_t{1} << 40;
  static constexpr int kMaxFaultCollective = 1 << 20;
  static constexpr int kMaxStragglerMs = 60000;
  static constexpr int kMaxFaultAllocation = 1 << 24;
  static constexpr int64_t kMaxFaultLimitBytes = int64_t{1} << 40;
  static constexpr int64_t kMaxDeviceMemoryBytes = int64_t{1} << 50;
};

}  // namespace shardfuzz::harness
