// Largest-remainder apportionment of a shape-only run's token copies over the experts.
#include "runtime/nn/routing_assumption.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace shardfuzz::nn {

std::vector<int64_t> RoutingAssumption::counts(int64_t copies, int64_t experts) const {
  if (copies < 0 || experts < 1)
    throw std::invalid_argument("routing assumption: " + std::to_string(copies) + " copies over " +
                                std::to_string(experts) + " experts");
  std::vector<double> weight(static_cast<std::size_t>(experts));
  for (int64_t e = 0; e < experts; ++e) weight[static_cast<std::size_t>(e)] = std::pow(static_cast<double>(e + 1), -skew);
  const double total = std::accumulate(weight.begin(), weight.end(), 0.0);
  std::vector<int64_t> out(weight.size());
  std::vector<std::pair<double, int64_t>> remainder;
  int64_t given = 0;
  for (std::size_t e = 0; e < weight.size(); ++e) {
    const double exact = static_cast<double>(copies) * weight[e] / total;
    out[e] = static_cast<int64_t>(std::floor(exact));
    given += out[e];
    remainder.emplace_back(exact - static_cast<double>(out[e]), static_cast<int64_t>(e));
  }
  std::stable_sort(remainder.begin(), remainder.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; given < copies; ++i, ++given) ++out[static_cast<std::size_t>(remainder[i % remainder.size()].second)];
  return out;
}

std::string RoutingAssumption::describe() const {
  if (skew == 0) return "balanced (every expert receives tokens x top_k / experts copies)";
  std::ostringstream s;
  s << "skewed (expert e receives a share proportional to 1/(e+1)^" << skew << ")";
  return s.str();
}

}  // namespace shardfuzz::nn
