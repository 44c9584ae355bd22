// The wait-for graph of a world's ranks across every process group, and the culprit it leads to.
//
// When a collective times out, the rank it waits on is often not the one at fault: rank 2 waits in
// group 'ep' for rank 0, which itself waits in 'dp_mod_ep' for rank 1, which hangs. PyTorch's
// flight recorder finds the culprit after the fact from per-rank dumps (its trace analyser);
// shardfuzz does it live, from what each rank is doing when the deadline fires. Backends that see
// every rank (ThreadWorld's shared state, the process backend's store) describe each rank as a
// RankActivity; attribute() follows the edges from the rank that gave up to the ranks that wait on
// nobody (paused, running outside any collective, returned) or to a cycle of ranks waiting on each
// other (collectives entered in different orders: a deadlock no deadline will fix).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardfuzz::comm {

struct RankActivity {
  enum class State {
    Running,     // in no collective: computing, or stuck outside the communicator
    Waiting,     // blocked in a collective (or a rendezvous) for the ranks in `on`
    Paused,      // away on the world's clock (a planned hang or straggler)
    Exited,      // returned from (or threw out of) its rank function
  };
  State state = State::Running;
  // Waiting: where, and for whom (global ranks).
  std::string group;
  uint64_t sequence = 0;
  std::string op;  // the call's signature, or the rendezvous' name
  std::vector<int> on;
  // Running and Paused: the last collective it entered, if any ("'dp' at sequence 3: all_gather(...)").
  std::string last;
};

struct Attribution {
  std::vector<int> culprits;  // sorted; empty when `from` waits on nobody
  bool cycle = false;         // the culprits wait on each other
  std::string text;           // "" when `from` waits on nobody
};

// From global rank `from` (Waiting), the ranks its wait ends at, with the shortest chain to each
// that `from` does not wait on directly: "culprit: rank 1 is paused, in no collective (last
// entered ...): rank 2 is waiting on rank 0 in 'ep' at sequence 2 (...); rank 0 is waiting on rank
// 1 in 'dp_mod_ep' at sequence 3 (...)".
Attribution attribute(const std::vector<RankActivity>& world, int from);

}  // namespace shardfuzz::comm
