// Template bodies of choice.h.
#pragma once

#include <rapidcheck/Random.h>
#include <rapidcheck/Shrinkable.h>
#include <rapidcheck/gen/Transform.h>
#include <rapidcheck/shrink/Shrink.h>
#include <rapidcheck/shrinkable/Create.h>
#include <rapidcheck/shrinkable/Transform.h>

#include <memory>
#include <stdexcept>

namespace shardfuzz::fuzz::gen {

namespace detail {
// Index of a weighted draw: P(i) = weights[i] / sum.
inline std::size_t weighted_index(const rc::Random& random, const std::vector<std::size_t>& weights) {
  std::size_t sum = 0;
  for (std::size_t w : weights) sum += w;
  if (sum == 0) throw std::invalid_argument("weighted choice: the weights sum to 0");
  std::size_t pick = static_cast<std::size_t>(rc::Random(random).next() % sum);
  for (std::size_t i = 0; i < weights.size(); ++i) {
    if (pick < weights[i]) return i;
    pick -= weights[i];
  }
  return weights.size() - 1;  // unreachable
}
}  // namespace detail

template <typename T>
rc::Gen<T> weighted_choice(std::vector<std::pair<std::size_t, T>> options) {
  if (options.empty()) throw std::invalid_argument("weighted choice: no options");
  auto values = std::make_shared<std::vector<T>>();
  std::vector<std::size_t> weights;
  for (auto& [w, v] : options) {
    weights.push_back(w);
    values->push_back(std::move(v));
  }
  return rc::Gen<T>([values, weights](const rc::Random& random, int) {
    const std::size_t i = detail::weighted_index(random, weights);
    return rc::shrinkable::map(
        rc::shrinkable::shrinkRecur(i, [](std::size_t x) { return rc::shrink::towards<std::size_t>(x, 0); }),
        [values](std::size_t x) -> T { return (*values)[x]; });
  });
}

inline rc::Gen<bool> flag(std::size_t if_false, std::size_t if_true) {
  return weighted_choice<bool>({{if_false, false}, {if_true, true}});
}

template <typename T>
rc::Gen<T> weighted_one_of(std::vector<std::pair<std::size_t, rc::Gen<T>>> gens) {
  return rc::gen::join(weighted_choice<rc::Gen<T>>(std::move(gens)));
}

}  // namespace shardfuzz::fuzz::gen
