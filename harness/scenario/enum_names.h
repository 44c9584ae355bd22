// One name table per enum of the scenario: the JSON reader, the writer, validation, the docs table,
// the command line and the torch export all spell an enum value through its table, so a name is
// written in one place. Specialise EnumNames<E> with `what` ("a block kind") and `table`.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace shardfuzz::harness {

template <class E>
struct EnumNames;  // static constexpr const char* what; static constexpr std::array<std::pair<E, const char*>, N> table;

template <class E, class = void>
struct has_enum_names : std::false_type {};
template <class E>
struct has_enum_names<E, std::void_t<decltype(EnumNames<E>::table)>> : std::true_type {};

// The value's name ("?" for a value outside the table: an enum cast from a stray integer).
template <class E>
const char* name_of(E value) {
  for (const auto& [v, name] : EnumNames<E>::table)
    if (v == value) return name;
  return "?";
}

template <class E>
std::optional<E> enum_from_name(std::string_view name) {
  for (const auto& [v, n] : EnumNames<E>::table)
    if (name == n) return v;
  return std::nullopt;
}

template <class E>
bool is_named(E value) {
  for (const auto& entry : EnumNames<E>::table)
    if (entry.first == value) return true;
  return false;
}

// "moe, routed_moe, mlp": the names in table order, for messages.
template <class E>
std::string enum_choices() {
  std::string out;
  for (const auto& entry : EnumNames<E>::table) out += (out.empty() ? "" : ", ") + std::string(entry.second);
  return out;
}

}  // namespace shardfuzz::harness
