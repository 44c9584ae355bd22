// Docs tables from the field lists: one row per field (nested single records flattened into dotted
// keys), the default taken from a default-made record, the allowed values from the field's
// Allowed and its doc line.
#include "harness/scenario/format_table.h"

#include "harness/scenario/codecs.hpp"
#include "harness/scenario/scenario.h"

#include <sstream>

namespace shardfuzz::harness {
namespace {

using fields_detail::json;

std::string code(const std::string& s) { return "`" + s + "`"; }

std::string allowed_text(const Allowed& allowed) {
  if (const auto* r = std::get_if<allow::Between>(&allowed)) return std::to_string(r->lo) + " ... " + std::to_string(r->hi);
  if (std::holds_alternative<allow::Positive>(allowed)) return "finite, > 0";
  if (std::holds_alternative<allow::NonNegative>(allowed)) return "finite, >= 0";
  if (std::holds_alternative<allow::Fraction>(allowed)) return "[0, 1)";
  if (const auto* m = std::get_if<allow::AtMost>(&allowed)) return "at most " + std::to_string(m->items);
  if (const auto* one = std::get_if<allow::OneOf>(&allowed)) {
    std::string out;
    for (const auto& n : one->names()) out += (out.empty() ? "" : ", ") + code(json(n).dump());
    return out;
  }
  return "";
}

template <class E>
std::string enum_text() {
  std::string out;
  for (const auto& entry : EnumNames<E>::table) out += (out.empty() ? "" : ", ") + code(json(entry.second).dump());
  return out;
}

struct Rows {
  std::ostringstream& out;
  std::string prefix;  // "dims." for a nested record's fields

  void row(const std::string& key, const std::string& type, const std::string& dflt, std::string allowed, const char* doc) {
    if (*doc) allowed += (allowed.empty() ? "" : "; ") + std::string(doc);
    out << "| " << code(prefix + key) << " | " << type << " | " << dflt << " | " << allowed << " |\n";
  }

  template <class T>
  void operator()(const char* key, const T& v, const Allowed& allowed, const char* doc) {
    using namespace fields_detail;
    if constexpr (is_optional<T>::value) {
      using U = typename T::value_type;
      row(key, type_name<U>(), "absent", value_allowed<U>(allowed), doc);
      if constexpr (is_record<U>::value) nested(key, U{});
    } else if constexpr (is_record<T>::value && !has_codec<T>::value) {
      if (*doc) row(key, "object", "", "", doc);
      nested(key, v);
    } else {
      const auto* most = std::get_if<allow::AtMost>(&allowed);
      const std::string type = most ? std::string("array of ") + most->noun : type_name<T>();
      row(key, type, code(write_value<json>(v).dump()), value_allowed<T>(allowed), doc);
    }
  }

  template <class U>
  static std::string value_allowed(const Allowed& allowed) {
    if constexpr (has_enum_names<U>::value) return enum_text<U>();
    else return allowed_text(allowed);
  }

  template <class R>
  void nested(const char* key, const R& record) {
    Rows inner{out, prefix + key + "."};
    Fields<R>::visit(record, inner);
  }
};

template <class R>
void table(std::ostringstream& out, const char* heading) {
  out << heading << "\n\n| key | type | default | allowed |\n|---|---|---|---|\n";
  const R defaults{};
  Rows rows{out, ""};
  if constexpr (std::is_same_v<R, Scenario>)
    rows.row("schema", "integer", "— (required)", "`1`",
             "checked before anything else, so a newer file says \"schema 2\" rather than \"unknown key\"");
  Fields<R>::visit(defaults, rows);
}

}  // namespace

std::string scenario_format_tables() {
  std::ostringstream out;
  table<Scenario>(out, "The scenario:");
  out << "\n";
  table<BlockSpec>(out, "A block (`blocks[i]`):");
  out << "\n";
  table<ShardSpec>(out, "A `fully_shard` entry (the key is the module path; `\"\"` is the root):");
  out << "\n";
  table<ScheduleSwitch>(out, "A schedule switch (`schedule.switches[i]`):");
  return out.str();
}

}  // namespace shardfuzz::harness
