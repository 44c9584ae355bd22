// Template bodies of list.h.
#pragma once

#include <rapidcheck/Random.h>
#include <rapidcheck/Seq.h>
#include <rapidcheck/Shrinkable.h>
#include <rapidcheck/seq/Transform.h>
#include <rapidcheck/shrink/Shrink.h>
#include <rapidcheck/shrinkable/Create.h>
#include <rapidcheck/shrinkable/Transform.h>

#include <stdexcept>

namespace shardfuzz::fuzz::gen {

namespace detail {
template <typename T>
std::vector<T> values_of(const std::vector<rc::Shrinkable<T>>& shrinkables) {
  std::vector<T> out;
  out.reserve(shrinkables.size());
  for (const auto& s : shrinkables) out.push_back(s.value());
  return out;
}

template <typename T>
rc::Seq<std::vector<rc::Shrinkable<T>>> shrink_each(const std::vector<rc::Shrinkable<T>>& elements) {
  return rc::shrink::eachElement(elements, [](const rc::Shrinkable<T>& s) { return s.shrinks(); });
}
}  // namespace detail

template <typename T>
rc::Gen<std::vector<T>> bounded_vector(std::size_t min, std::size_t max, rc::Gen<T> gen) {
  if (min > max) throw std::invalid_argument("bounded_vector: min > max");
  return rc::Gen<std::vector<T>>([=](const rc::Random& random, int size) {
    using Elements = std::vector<rc::Shrinkable<T>>;
    rc::Random r(random);
    const std::size_t count = min + static_cast<std::size_t>(r.split().next() % (max - min + 1));
    Elements elements;
    elements.reserve(count);
    for (std::size_t i = 0; i < count; ++i) elements.push_back(gen(r.split(), size));
    return rc::shrinkable::map(
        rc::shrinkable::shrinkRecur(std::move(elements),
                                    [min](const Elements& e) {
                                      return rc::seq::concat(
                                          rc::seq::filter(rc::shrink::removeChunks(e),
                                                          [min](const Elements& kept) { return kept.size() >= min; }),
                                          detail::shrink_each(e));
                                    }),
        &detail::values_of<T>);
  });
}

template <typename T>
rc::Gen<std::vector<T>> sequence(std::vector<rc::Gen<T>> gens) {
  return rc::Gen<std::vector<T>>([gens](const rc::Random& random, int size) {
    using Elements = std::vector<rc::Shrinkable<T>>;
    rc::Random r(random);
    Elements elements;
    elements.reserve(gens.size());
    for (const auto& g : gens) elements.push_back(g(r.split(), size));
    return rc::shrinkable::map(rc::shrinkable::shrinkRecur(std::move(elements), &detail::shrink_each<T>),
                               &detail::values_of<T>);
  });
}

}  // namespace shardfuzz::fuzz::gen
