// FSDP2's two state enums, with the names its traces use.
#pragma once

namespace shardfuzz::fsdp {

enum class TrainingState { Idle, Forward, PreBackward, PostBackward };
enum class ShardedState { Sharded, ShardedPostForward, Unsharded };
enum class Pass { Forward, Backward };

inline const char* to_string(TrainingState s) {
  switch (s) {
    case TrainingState::Idle: return "IDLE";
    case TrainingState::Forward: return "FORWARD";
    case TrainingState::PreBackward: return "PRE_BACKWARD";
    case TrainingState::PostBackward: return "POST_BACKWARD";
  }
  return "?";
}
inline const char* to_string(ShardedState s) {
  switch (s) {
    case ShardedState::Sharded: return "SHARDED";
    case ShardedState::ShardedPostForward: return "SHARDED_POST_FORWARD";
    case ShardedState::Unsharded: return "UNSHARDED";
  }
  return "?";
}
inline const char* to_string(Pass p) { return p == Pass::Forward ? "forward" : "backward"; }

}  // namespace shardfuzz::fsdp
