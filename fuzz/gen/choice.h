// Choices that shrink toward the simplest option: RapidCheck's gen::element and
// gen::weightedElement never shrink, so every categorical draw of the scenario generator goes
// through these. Options are listed simplest first; weights only bias generation, so an option of
// weight 0 is never drawn but is still a shrink target.
#pragma once

#include <rapidcheck/Gen.h>

#include <cstddef>
#include <utility>
#include <vector>

namespace shardfuzz::fuzz::gen {

// One of `options` with probability weight / sum; shrinks toward options earlier in the list.
template <typename T>
rc::Gen<T> weighted_choice(std::vector<std::pair<std::size_t, T>> options);

// false with weight `if_false`, true with weight `if_true`; shrinks toward false.
rc::Gen<bool> flag(std::size_t if_false, std::size_t if_true);

// Draws from one of `gens`; shrinks first toward earlier generators (re-drawn from the same
// random state), then within the chosen generator.
template <typename T>
rc::Gen<T> weighted_one_of(std::vector<std::pair<std::size_t, rc::Gen<T>>> gens);

}  // namespace shardfuzz::fuzz::gen

#include "fuzz/gen/choice.hpp"
