// One thread per lane for a batch; workers started beforehand on the calling thread.
#include "fuzz/campaign/case_pool.h"

#include <algorithm>
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

void CasePool::on_lanes(std::size_t n, const std::function<void(CaseRunner&, std::size_t)>& work) {
  if (n > lanes_.size())
    throw std::logic_error("CasePool: " + std::to_string(n) + " tasks for " + std::to_string(lanes_.size()) + " lanes");
  // A worker that died on the last batch restarts here, while this process is single-threaded.
  for (std::size_t i = 0; i < n; ++i) lanes_[i]->start_worker();
  std::vector<std::exception_ptr> errors(n);
  auto lane = [&](std::size_t i) {
    try {
      work(*lanes_[i], i);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < n; ++i) threads.emplace_back(lane, i);
  if (n > 0) lane(0);
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

std::vector<std::optional<std::string>> CasePool::run(const std::vector<const harness::Scenario*>& scenarios,
                                                      const Task& task) {
  std::vector<std::optional<std::string>> answers(scenarios.size());
  on_lanes(scenarios.size(), [&](CaseRunner& r, std::size_t i) { answers[i] = task(r, *scenarios[i]); });
  return answers;
}

std::vector<std::string> CasePool::verdicts_under(const harness::Scenario& scenario,
                                                  const std::vector<std::string>& profiles) {
  std::vector<std::string> verdicts(profiles.size());
  for (std::size_t first = 0; first < profiles.size(); first += lanes_.size()) {
    const std::size_t n = std::min(lanes_.size(), profiles.size() - first);
    on_lanes(n, [&](CaseRunner& r, std::size_t i) { verdicts[first + i] = r.verdict_under(scenario, profiles[first + i]); });
  }
  return verdicts;
}

}  // namespace shardfuzz::fuzz
