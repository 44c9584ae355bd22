// Records described once. Each record type of the scenario (Scenario, Dims, BlockSpec, ShardSpec,
// MixedPrecisionSpec, the optimizer, each kind of fault) lists its fields in one place, beside its
// struct: `Fields<R>::visit(record, v)` calls `v(key, member, allowed, doc)` for each field, in the
// order the JSON writes them. The JSON writer, the strict reader, range validation and the table in
// docs/scenario-format.md are visitors over that list (harness/scenario/field_visitors.hpp), so a
// new field is one struct line and one list line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace shardfuzz::harness {

// What a field allows beyond its type (checked by validation, described in the docs table).
namespace allow {
struct Any {};
struct Between {  // integers: lo ... hi
  int64_t lo, hi;
};
struct Positive {};     // a finite number > 0
struct NonNegative {};  // a finite number >= 0
struct Fraction {};     // a number in [0, 1)
struct OneOf {          // a string from a list: "\"x\" is not a <what> (a, b)"
  const std::vector<std::string>& (*names)();
  const char* what;
};
struct AtMost {  // arrays: at most `items` elements, counted before any is read
  std::size_t items;
  const char* noun;  // "blocks": "129 blocks, over the limit of 128"
};
}  // namespace allow

using Allowed = std::variant<allow::Any, allow::Between, allow::Positive, allow::NonNegative, allow::Fraction,
                             allow::OneOf, allow::AtMost>;

// Specialised for each record type: `static constexpr const char* what` (the docs' name of one
// record: "a block") and `template <class R, class V> static void visit(R& record, V& v)`, R being
// the record or the const record.
template <class R>
struct Fields;

template <class T, class = void>
struct is_record : std::false_type {};
template <class T>
struct is_record<T, std::void_t<decltype(Fields<T>::what)>> : std::true_type {};

}  // namespace shardfuzz::harness
