// Isolation, one-shot: runs a piece of the harness in a forked child under a wall-clock and a
// memory limit, so a segfault, abort, runaway allocation or hang of the code under test ends that
// child, not the caller. The work returns a string (the caller serialises what it needs). For many
// pieces of work in a row, harness/isolation/worker_process.h keeps one child alive between them.
#pragma once

#include "harness/isolation/child_outcome.h"

#include <functional>
#include <string>

namespace shardfuzz::harness::isolation {

// Never throws for what the child does; throws std::runtime_error when fork or pipe fail and
// std::logic_error when the calling process is multi-threaded.
ChildOutcome run_in_child(const std::function<std::string()>& work, const Limits& limits);

}  // namespace shardfuzz::harness::isolation
