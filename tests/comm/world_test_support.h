// What the ThreadWorld tests share: a world of n rank threads running one function.
#pragma once

#include "runtime/comm/thread_world.h"

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

namespace shardfuzz::comm::testing_support {

using Fn = std::function<void(std::shared_ptr<Communicator>)>;

inline std::vector<RankOutcome> run_world(int n, const Fn& fn,
                                          std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
  return ThreadWorld(ThreadWorldOptions{n, deadline}).run(fn);
}

}  // namespace shardfuzz::comm::testing_support
