// One thread per lane for a batch; workers started beforehand on the calling thread.
#include "fuzz/case_pool.h"

#include <exception>
#include <stdexcept>
#include <thread>

namespace shardfuzz::fuzz {

CasePool::CasePool(CaseRunner& first, harness::Backend& backend, const harness::isolation::Limits& limits, int width) {
  if (!first.isolated()) throw std::logic_error("CasePool: lanes run isolated cases; the first runner is in-process");
  if (width < 1) throw std::invalid_argument("CasePool: width " + std::to_string(width) + " < 1");
  lanes_.push_back(&first);
  for (int i = 1; i < width; ++i) {
    owned_.push_back(std::make_unique<CaseRunner>(backend, limits));
    lanes_.push_back(owned_.back().get());
  }
}

std::vector<std::optional<std::string>> CasePool::run(const std::vector<const harness::Scenario*>& scenarios,
                                                      const Task& task) {
  if (scenarios.size() > lanes_.size())
    throw std::logic_error("CasePool: " + std::to_string(scenarios.size()) + " scenarios for " +
                           std::to_string(lanes_.size()) + " lanes");
  // A worker that died on the last batch restarts here, while this process is single-threaded.
  for (std::size_t i = 0; i < scenarios.size(); ++i) lanes_[i]->start_worker();
  std::vector<std::optional<std::string>> answers(scenarios.size());
  std::vector<std::exception_ptr> errors(scenarios.size());
  auto lane = [&](std::size_t i) {
    try {
      answers[i] = task(*lanes_[i], *scenarios[i]);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < scenarios.size(); ++i) threads.emplace_back(lane, i);
  if (!scenarios.empty()) lane(0);
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  return answers;
}

}  // namespace shardfuzz::fuzz
