// What a shape-only run assumes about routing. The tokens each expert receives depend on the
// router's values, which a run without data does not have; so the per-expert counts (hence the
// all-to-all splits and the experts' activations) come from a stated distribution instead: global
// expert e gets a share proportional to 1 / (e + 1)^skew of the copies (skew 0: balanced).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardfuzz::nn {

struct RoutingAssumption {
  double skew = 0.0;
  // `copies` (tokens x top_k) split over `experts` by the shares above, rounded by largest
  // remainder so they sum to `copies` exactly (ties to the lower expert index).
  std::vector<int64_t> counts(int64_t copies, int64_t experts) const;
  // "balanced" or "skewed 1/(e+1)^1.5", for the reports.
  std::string describe() const;
};

}  // namespace shardfuzz::nn
