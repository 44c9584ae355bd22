// Lists whose shrinking keeps them legal: a bounded-length list that shrinks by dropping elements
// (never below its minimum length, largest chunks first) and then element by element, and a
// fixed-length sequence of differently weighted draws that shrinks element by element, in order.
#pragma once

#include <rapidcheck/Gen.h>

#include <cstddef>
#include <vector>

namespace shardfuzz::fuzz::gen {

// min..max elements of `gen` (length uniform in that range).
template <typename T>
rc::Gen<std::vector<T>> bounded_vector(std::size_t min, std::size_t max, rc::Gen<T> gen);

// One element from each generator, in order.
template <typename T>
rc::Gen<std::vector<T>> sequence(std::vector<rc::Gen<T>> gens);

}  // namespace shardfuzz::fuzz::gen

#include "fuzz/gen/list.hpp"
