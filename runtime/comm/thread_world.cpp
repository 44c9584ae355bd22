// Starts, aborts and joins the rank threads of one ThreadWorld run.
#include "runtime/comm/thread_world.h"
#include "runtime/comm/blas_threads.h"
#include "runtime/comm/group_state.h"
#include "runtime/comm/rank_context.h"
#include "runtime/comm/thread_communicator.h"

#include <ATen/Parallel.h>

#include <numeric>
#include <stdexcept>
#include <thread>

namespace shardfuzz::comm {

ThreadWorld::ThreadWorld(ThreadWorldOptions options) : options_(options) {
  if (options_.world_size < 1 || options_.world_size > 1024)
    throw std::invalid_argument("ThreadWorldOptions.world_size: " + std::to_string(options_.world_size) +
                                " is outside 1..1024");
  if (options_.deadline.count() <= 0)
    throw std::invalid_argument("ThreadWorldOptions.deadline: " + std::to_string(options_.deadline.count()) +
                                " ms must be positive");
  // An intra-op pool per rank thread would oversubscribe the cores.
  one_intra_op_thread_per_process();
}

std::vector<RankOutcome> ThreadWorld::run(const std::function<void(std::shared_ptr<Communicator>)>& fn) {
  const int n = options_.world_size;
  if (n > 1) {
    static const std::string unsafe = thread_unsafe_blas_loaded();
    if (!unsafe.empty())
      throw std::runtime_error("ThreadWorld: the BLAS loaded (" + unsafe +
                               ") is not thread-safe: " + std::to_string(n) +
                               " rank threads would corrupt each other's matmuls. Use the reference BLAS or "
                               "OpenBLAS's pthread build (apt-get install libopenblas0-pthread; apt-get remove "
                               "libopenblas0-serial)");
  }
  auto world = std::make_shared<detail::WorldState>(n, options_.deadline, options_.schedule);
  std::vector<int> ranks(n);
  std::iota(ranks.begin(), ranks.end(), 0);
  auto group = detail::GroupState::create(world, "world", ranks);

  std::vector<RankOutcome> outcomes(n);
  auto rank_main = [&](int rank) {
    RankScope scope(rank);
    RankOutcome& outcome = outcomes[rank];
    outcome.rank = rank;
    at::init_num_threads();  // this thread's OpenMP / MKL team: the one thread set above, not every core
    world->start_rank(rank);
    try {
      fn(std::make_shared<detail::ThreadCommunicator>(group, rank));
      outcome.ok = true;
    } catch (const std::exception& e) {
      outcome.error = e.what();
      outcome.exception = std::current_exception();
    } catch (...) {
      outcome.error = "unknown exception";
      outcome.exception = std::current_exception();
    }
    if (!outcome.ok) world->abort(rank, outcome.error);
    world->mark_exited(rank);
    outcome.collectives_after_abort = world->collectives_after_abort(rank);
  };

  std::vector<std::thread> threads;
  threads.reserve(n);
  try {
    for (int r = 0; r < n; ++r) threads.emplace_back(rank_main, r);
  } catch (...) {
    // Ranks already running would wait for the ones that never started.
    world->abort(-1, "could not start all " + std::to_string(n) + " rank threads");
    world->release_schedule();
    for (auto& t : threads) t.join();
    throw;
  }
  for (auto& t : threads) t.join();
  schedule_record_ = world->schedule_record();
  return outcomes;
}

void rethrow_root_failure(const std::vector<RankOutcome>& outcomes) {
  const RankOutcome* first = nullptr;
  for (const auto& o : outcomes) {
    if (o.ok) continue;
    if (!first) first = &o;
    try {
      std::rethrow_exception(o.exception);
    } catch (const CollectiveError& e) {
      if (e.kind != CollectiveError::Kind::Aborted) throw;
    } catch (...) {
      throw;
    }
  }
  if (first) std::rethrow_exception(first->exception);
}

}  // namespace shardfuzz::comm
