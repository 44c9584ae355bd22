// Activation checkpointing in the variants that behave differently under FSDP2:
// - non-reentrant: the forward runs with grad (hooks inside register for real), saved tensors are
//   dropped, and the first unpack in backward recomputes the region under grad; the recomputed
//   graph is never back-propagated;
// - reentrant: the forward runs under no-grad (no hooks register), and backward recomputes the
//   region under grad and runs a nested backward through it, so the hooks inside fire for real;
// - selective_ops: op-level selective AC with upstream's "save matmuls" policy (policy_fn returning
//   MUST_SAVE for mm/addmm, PREFER_RECOMPUTE otherwise). Modelled as upstream runs it: a
//   non-reentrant region whose saves are all dropped and whose first unpack of any of them
//   recomputes the whole region fn (nested modules' forward hooks re-fire, at the same point of
//   backward as non-reentrant), but the *outputs* of matmul-like ops (ops::linear, ops::matmul)
//   are kept from the forward and handed back during the recompute instead of being computed
//   again (upstream's _CachingTorchDispatchMode / _CachedTorchDispatchMode). So the memory held
//   between forward and backward is those outputs, and the recompute skips the matmuls.
//   Not chosen: keeping the saves *made by* matmul ops instead, which would move the recompute to
//   the first unpack of a non-matmul save (or drop it when a region is all matmuls) and so change
//   when nested FSDP hooks re-fire relative to upstream.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace shardfuzz::ac {

enum class CheckpointMode { None, NonReentrant, Reentrant, SelectiveOps };
// The modes' names: the one table (the scenario's JSON and the traces spell them so).
inline constexpr std::array<std::pair<CheckpointMode, const char*>, 4> kCheckpointModeNames{
    {{CheckpointMode::None, "none"},
     {CheckpointMode::NonReentrant, "non_reentrant"},
     {CheckpointMode::Reentrant, "reentrant"},
     {CheckpointMode::SelectiveOps, "selective_ops"}}};
const char* to_string(CheckpointMode mode);
CheckpointMode checkpoint_mode_from_string(const std::string& name);  // throws naming the value

using RegionFn = std::function<at::Tensor(const at::Tensor&)>;

// Runs `fn(input)` as a checkpointed region. `where` names the region in errors (module path).
// reentrant_needs_input_grad: upstream's use_reentrant=True (true, the default) gives the region no
// backward when its input needs no grad; false backs it as if the input needed grad.
at::Tensor checkpoint(CheckpointMode mode, const RegionFn& fn, const at::Tensor& input, const std::string& where,
                      bool reentrant_needs_input_grad = true);

// What this thread's checkpoint regions did (backward on CPU runs on the calling thread, so one
// rank thread sees its forward and its recompute). For tests and reports; reset by assigning {}.
struct CheckpointCounters {
  std::size_t saves_dropped = 0;   // saves a region turned into slots
  std::size_t outputs_kept = 0;    // matmul-like outputs a selective region kept in forward
  std::size_t bytes_kept = 0;      // their bytes
  std::size_t recomputes = 0;      // region recomputes (non-reentrant and selective)
  std::size_t outputs_reused = 0;  // kept outputs handed back during a recompute
};
CheckpointCounters& checkpoint_counters();

// What one checkpoint region did in one pass, as whoever observes it (the rank runtime's timeline,
// as "checkpoint_forward" and "checkpoint_recompute" events of category "ac") sees it: enough for a
// property to judge the policy the scenario asked for without trusting the region's own mode.
struct RegionReport {
  enum class Pass { Forward, Recompute };
  Pass pass = Pass::Forward;
  std::string where;  // the region's module path
  CheckpointMode mode = CheckpointMode::None;
  std::size_t saves = 0;            // forward: tensors dropped into slots; recompute: slots refilled
  std::size_t matmul_like_ran = 0;  // matmul-like ops that computed in this pass (not handed back)
  std::size_t outputs_kept = 0;     // forward: matmul-like outputs kept for the recompute
  int64_t bytes_kept = 0;           // their bytes
  std::size_t outputs_reused = 0;   // recompute: kept outputs handed back instead of computed
};
using RegionObserver = std::function<void(const RegionReport&)>;

// Makes `observer` this thread's for the guard's lifetime. A region keeps the observer that was
// current when its forward ran and reports its recompute there too, whichever thread runs backward
// (on a device the autograd engine runs it on its own threads).
class RegionObserverGuard {
 public:
  explicit RegionObserverGuard(RegionObserver observer);
  ~RegionObserverGuard();
  RegionObserverGuard(const RegionObserverGuard&) = delete;
  RegionObserverGuard& operator=(const RegionObserverGuard&) = delete;

 private:
  std::shared_ptr<const RegionObserver> previous_;
};

}  // namespace shardfuzz::ac
