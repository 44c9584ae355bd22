// Isolated case workers side by side, for the runs of a shrink that can go at once (fuzz/shrink/shrink.h,
// ShrinkInParallel): lane 0 is the campaign's own CaseRunner, the others are made like it, each
// with its persistent worker child. A batch runs one task per lane on threads of this process;
// the runtime itself runs only in the workers, so the threads only wait on pipes, and every worker
// is started (forked) before they exist: fork needs a single-threaded process.
#pragma once

#include "fuzz/campaign/case_runner.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::fuzz {

class CasePool {
 public:
  // `first` (isolated) is lane 0 and must outlive the pool; width - 1 more lanes run on `backend`
  // under `limits`.
  CasePool(CaseRunner& first, harness::Backend& backend, const harness::isolation::Limits& limits, int width);

  int width() const { return static_cast<int>(lanes_.size()); }
  using Task = std::function<std::optional<std::string>(CaseRunner&, const harness::Scenario&)>;
  // task(lane i, *scenarios[i]) for each scenario at once (at most width()); the answers in order.
  // The first exception (in order) is rethrown once every task has ended.
  std::vector<std::optional<std::string>> run(const std::vector<const harness::Scenario*>& scenarios,
                                              const Task& task);
  // The first failing property of `scenario` under each profile, or "pass" (CaseRunner::verdict_under),
  // width() at a time.
  std::vector<std::string> verdicts_under(const harness::Scenario& scenario, const std::vector<std::string>& profiles);

 private:
  // work(lane i, i) for i < n <= width() at once; rethrows the first exception once all have ended.
  void on_lanes(std::size_t n, const std::function<void(CaseRunner&, std::size_t)>& work);

  std::vector<CaseRunner*> lanes_;
  std::vector<std::unique_ptr<CaseRunner>> owned_;
};

}  // namespace shardfuzz::fuzz
