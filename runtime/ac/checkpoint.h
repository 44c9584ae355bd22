// Activation checkpointing in the two variants that behave differently under FSDP2:
// - non-reentrant: the forward runs with grad (hooks inside register for real), saved tensors are
//   dropped, and the first unpack in backward recomputes the region under grad; the recomputed
//   graph is never back-propagated;
// - reentrant: the forward runs under no-grad (no hooks register), and backward recomputes the
//   region under grad and runs a nested backward through it, so the hooks inside fire for real.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>

namespace shardfuzz::ac {

enum class CheckpointMode { None, NonReentrant, Reentrant };
const char* to_string(CheckpointMode mode);
CheckpointMode checkpoint_mode_from_string(const std::string& name);  // throws naming the value

using RegionFn = std::function<at::Tensor(const at::Tensor&)>;

// Runs `fn(input)` as a checkpointed region. `where` names the region in errors (module path).
at::Tensor checkpoint(CheckpointMode mode, const RegionFn& fn, const at::Tensor& input, const std::string& where);

// Layer-level selective AC: whether block `index` is checkpointed when every k-th block is.
inline bool selected_for_checkpoint(int index, int every_k) { return every_k > 0 && index % every_k == 0; }

}  // namespace shardfuzz::ac
