// The timeline's vocabulary: every event a rank records, and the category it belongs to, as enums
// with one name table. The names are upstream's (the recorded conformance traces, the torch
// recorder's and the JSON form of a timeline spell them so); everything else compares the enums,
// so a misspelt event is a compile error rather than an event that silently never matches.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace shardfuzz::memory {

// Who recorded an event: the FSDP2 state machine, the training step, an activation-checkpoint
// region, or recovery after a fault.
enum class Category : int { Fsdp = 0, Train, Ac, Recovery, kCount };
inline constexpr std::size_t kCategories = static_cast<std::size_t>(Category::kCount);

enum class Event : int {
  // fsdp (runtime/fsdp/param_group.cpp)
  PreForward = 0,
  PostForward,
  PreBackwardBegin,
  PreBackwardEnd,
  Prefetch,          // detail: target, pass, skipped (why, when the profile skips it)
  AllGatherIssued,   // detail: state (the training state it was issued in)
  Reshard,           // detail: state, kept (a FORWARD reshard that kept the parameters)
  PostBackward,
  FinalizeBackward,  // detail: dropped_pending_all_gather
  NonfiniteGrad,     // detail: param, where (before_reduce_scatter / after_reduce_scatter)
  // recovery (runtime/fsdp/param_group.cpp, runtime/train/recovery.cpp)
  ResetAfterFault,
  Recovered,         // detail: attempt, recoveries, error
  // train (runtime/train/step.cpp; teardown: harness/backends/rank_run.cpp)
  StepBegin,
  ForwardEnd,        // detail: micro_batch
  BackwardEnd,       // detail: micro_batch
  OptimizerStep,
  ZeroGrad,
  EvalForwardEnd,
  StepEnd,           // detail: loss
  Teardown,
  // ac (runtime/ac/checkpoint.cpp through RankRuntime::checkpoint_observer)
  CheckpointForward,  // detail: mode, saves, matmul_like_ran, outputs_kept, bytes_kept, outputs_reused
  CheckpointRecompute,
  kCount
};
inline constexpr std::size_t kEvents = static_cast<std::size_t>(Event::kCount);

struct EventInfo {
  Event event;
  const char* name;  // upstream's spelling, as traces and JSON carry it
  Category category;
};

// The one name table, in enum order (event.cpp checks the order at compile time).
inline constexpr std::array<EventInfo, kEvents> kEventTable = {{
    {Event::PreForward, "pre_forward", Category::Fsdp},
    {Event::PostForward, "post_forward", Category::Fsdp},
    {Event::PreBackwardBegin, "pre_backward_begin", Category::Fsdp},
    {Event::PreBackwardEnd, "pre_backward_end", Category::Fsdp},
    {Event::Prefetch, "prefetch", Category::Fsdp},
    {Event::AllGatherIssued, "all_gather_issued", Category::Fsdp},
    {Event::Reshard, "reshard", Category::Fsdp},
    {Event::PostBackward, "post_backward", Category::Fsdp},
    {Event::FinalizeBackward, "finalize_backward", Category::Fsdp},
    {Event::NonfiniteGrad, "nonfinite_grad", Category::Fsdp},
    {Event::ResetAfterFault, "reset_after_fault", Category::Recovery},
    {Event::Recovered, "recovered", Category::Recovery},
    {Event::StepBegin, "step_begin", Category::Train},
    {Event::ForwardEnd, "forward_end", Category::Train},
    {Event::BackwardEnd, "backward_end", Category::Train},
    {Event::OptimizerStep, "optimizer_step", Category::Train},
    {Event::ZeroGrad, "zero_grad", Category::Train},
    {Event::EvalForwardEnd, "eval_forward_end", Category::Train},
    {Event::StepEnd, "step_end", Category::Train},
    {Event::Teardown, "teardown", Category::Train},
    {Event::CheckpointForward, "checkpoint_forward", Category::Ac},
    {Event::CheckpointRecompute, "checkpoint_recompute", Category::Ac},
}};

inline constexpr std::array<std::pair<Category, const char*>, kCategories> kCategoryTable = {{
    {Category::Fsdp, "fsdp"},
    {Category::Train, "train"},
    {Category::Ac, "ac"},
    {Category::Recovery, "recovery"},
}};

// The name ("?" for a value outside the table: an enum cast from a stray integer).
const std::string& name_of(Event event);
const std::string& name_of(Category category);
// The category an event is recorded under.
Category category_of(Event event);
std::optional<Event> event_from_name(std::string_view name);
std::optional<Category> category_from_name(std::string_view name);
// "pre_forward, post_forward, ...": every name in table order, for messages.
std::string known_event_names();
std::string known_category_names();

inline std::ostream& operator<<(std::ostream& os, Event event) { return os << name_of(event); }
inline std::ostream& operator<<(std::ostream& os, Category category) { return os << name_of(category); }

}  // namespace shardfuzz::memory
