// The timeline's name tables: names to enums and back.
#include "runtime/memory/event.h"

namespace shardfuzz::memory {
namespace {

constexpr bool events_in_enum_order() {
  for (std::size_t i = 0; i < kEventTable.size(); ++i)
    if (static_cast<std::size_t>(kEventTable[i].event) != i) return false;
  return true;
}
static_assert(events_in_enum_order(), "kEventTable: one row per Event, in enum order");

constexpr bool categories_in_enum_order() {
  for (std::size_t i = 0; i < kCategoryTable.size(); ++i)
    if (static_cast<std::size_t>(kCategoryTable[i].first) != i) return false;
  return true;
}
static_assert(categories_in_enum_order(), "kCategoryTable: one row per Category, in enum order");

const std::string& unknown() {
  static const std::string name = "?";
  return name;
}

template <std::size_t N, class Row, class NameOf>
std::array<std::string, N> names(const std::array<Row, N>& table, NameOf name_of_row) {
  std::array<std::string, N> out;
  for (std::size_t i = 0; i < N; ++i) out[i] = name_of_row(table[i]);
  return out;
}

const std::array<std::string, kEvents>& event_names() {
  static const auto table = names(kEventTable, [](const EventInfo& row) { return row.name; });
  return table;
}

const std::array<std::string, kCategories>& category_names() {
  static const auto table = names(kCategoryTable, [](const auto& row) { return row.second; });
  return table;
}

template <std::size_t N>
std::string joined(const std::array<std::string, N>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

const std::string& name_of(Event event) {
  const auto i = static_cast<std::size_t>(event);
  return i < kEvents ? event_names()[i] : unknown();
}

const std::string& name_of(Category category) {
  const auto i = static_cast<std::size_t>(category);
  return i < kCategories ? category_names()[i] : unknown();
}

Category category_of(Event event) {
  const auto i = static_cast<std::size_t>(event);
  return i < kEvents ? kEventTable[i].category : Category::Fsdp;
}

std::optional<Event> event_from_name(std::string_view name) {
  for (const auto& row : kEventTable)
    if (name == row.name) return row.event;
  return std::nullopt;
}

std::optional<Category> category_from_name(std::string_view name) {
  for (const auto& [category, n] : kCategoryTable)
    if (name == n) return category;
  return std::nullopt;
}

std::string known_event_names() { return joined(event_names()); }
std::string known_category_names() { return joined(category_names()); }

}  // namespace shardfuzz::memory
