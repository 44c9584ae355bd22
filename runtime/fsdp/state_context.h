// What the root shares with every FSDP state of its tree (upstream FSDPStateContext and
// FSDPCommContext): the states in pre-order, the forward root of this iteration, the global
// post_forward_order, the deferred all-gather slot and the reduce-scatter keep-alives.
#pragma once

#include "runtime/fsdp/collectives.h"

#include <deque>
#include <memory>
#include <vector>

namespace shardfuzz::fsdp {

class FSDPState;
class ParamGroup;

struct StateContext {
  std::vector<FSDPState*> all_states;  // pre-order over the root's module tree
  FSDPState* iter_forward_root = nullptr;
  bool post_backward_final_callback_queued = false;
  bool is_last_backward = true;

  // comm context
  std::vector<ParamGroup*> post_forward_order;  // one entry per post_forward record, in order
  std::unique_ptr<AllGatherResult> all_gather_state;  // consumed flat output awaiting the next wait
  std::deque<std::unique_ptr<ReduceScatterState>> reduce_scatter_states;
  std::size_t reduce_scatter_keep = 1;  // upstream's cap K
  std::unique_ptr<AllReduceState> all_reduce_state;  // HSDP: the newest group's reduce output
};

}  // namespace shardfuzz::fsdp
