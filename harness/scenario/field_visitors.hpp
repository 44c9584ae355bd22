// The visitors over a record's field list (harness/scenario/fields.h): write JSON, read it strictly,
// check each field's allowed values, and describe the fields as a docs table. Internal to
// harness/scenario: the public API is scenario_json.h, Scenario::validate and format_table.h.
#pragma once

#include "harness/scenario/quoted.h"
#include "harness/scenario/enum_names.h"
#include "harness/scenario/fields.h"

#include <nlohmann/json.hpp>

#include <climits>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace shardfuzz::harness::fields_detail {

using json = nlohmann::json;

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};
template <class T>
struct is_record_vector : std::false_type {};
template <class T>
struct is_record_vector<std::vector<T>> : is_record<T> {};
template <class T>
struct is_map : std::false_type {};
template <class T>
struct is_map<std::map<std::string, T>> : std::true_type {};

// A value type whose JSON form is its own (fsdp::ReshardAfterForward, the fault plan, the profile):
// specialise with `template <class Json> static Json write(const T&)`, `static T read(const json&,
// const std::string& path)`, `static const char* type()`, and optionally `static void check(const
// std::string& path, const T&)` and `static constexpr bool omit_when_empty`.
template <class T>
struct Codec;
template <class T, class = void>
struct has_codec : std::false_type {};
template <class T>
struct has_codec<T, std::void_t<decltype(Codec<T>::type())>> : std::true_type {};

// ---- paths and messages --------------------------------------------------------------------------

inline bool is_identifier(const std::string& key) {
  if (key.empty() || key.size() > 64) return false;
  for (std::size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// "a block kind" -> "block kind"
inline std::string without_article(const char* what) {
  const std::string s = what;
  const auto space = s.find(' ');
  return space == std::string::npos ? s : s.substr(space + 1);
}

inline std::string member(const std::string& parent, const char* key) { return parent.empty() ? key : parent + "." + key; }
inline std::string element(const std::string& parent, std::size_t i) { return parent + "[" + std::to_string(i) + "]"; }
inline std::string keyed(const std::string& parent, const std::string& key) { return parent + "[" + quoted(key) + "]"; }

[[noreturn]] inline void reject(const std::string& path, const std::string& what) {
  throw std::invalid_argument((path.empty() ? "scenario" : path) + ": " + what);
}

inline std::string show(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// What a value is, for "expected X, got Y": scalars with their value, containers by kind only.
inline std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "the number " + v.dump();
    case json::value_t::string: return "the string " + quoted(v.get_ref<const std::string&>());
    case json::value_t::array: return "an array of " + std::to_string(v.size());
    case json::value_t::object: return "an object";
    default: return "a binary value";
  }
}

[[noreturn]] inline void wrong_type(const std::string& path, const char* expected, const json& v) {
  reject(path, std::string("expected ") + expected + ", got " + describe(v));
}

// ---- scalars ------------------------------------------------------------------------------------

inline int64_t read_int64(const json& v, const std::string& path) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      reject(path, std::to_string(u) + " is out of range for a signed 64-bit integer");
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  wrong_type(path, "an integer", v);
}

inline int read_int(const json& v, const std::string& path) {
  const int64_t n = read_int64(v, path);
  if (n < INT_MIN || n > INT_MAX) reject(path, std::to_string(n) + " is out of range for a 32-bit integer");
  return static_cast<int>(n);
}

inline uint64_t read_uint64(const json& v, const std::string& path) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) {
    const int64_t n = v.get<int64_t>();
    if (n < 0) reject(path, std::to_string(n) + " is negative (expected an unsigned 64-bit integer)");
    return static_cast<uint64_t>(n);
  }
  wrong_type(path, "an unsigned 64-bit integer", v);
}

inline const std::string& read_string(const json& v, const std::string& path) {
  if (!v.is_string()) wrong_type(path, "a string", v);
  return v.get_ref<const std::string&>();
}

// ---- one value: write, read, type name ----------------------------------------------------------

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, bool>) return "boolean";
  else if constexpr (std::is_same_v<T, uint64_t>) return "unsigned 64-bit integer";
  else if constexpr (std::is_integral_v<T>) return "integer";
  else if constexpr (std::is_floating_point_v<T>) return "number";
  else if constexpr (std::is_same_v<T, std::string> || has_enum_names<T>::value) return "string";
  else if constexpr (std::is_same_v<T, std::vector<std::string>>) return "array of strings";
  else if constexpr (has_codec<T>::value) return Codec<T>::type();
  else if constexpr (is_record<T>::value) return "object";
  else if constexpr (is_vector<T>::value) return "array of objects";
  else if constexpr (is_map<T>::value) return "object: module path -> options";
  else static_assert(sizeof(T) == 0, "no JSON form for this field type");
}

template <class Json, class R>
Json write_record(const R& record);

template <class Json, class T>
Json write_value(const T& v) {
  if constexpr (has_codec<T>::value) return Codec<T>::template write<Json>(v);
  else if constexpr (has_enum_names<T>::value) return name_of(v);
  else if constexpr (is_record<T>::value) return write_record<Json>(v);
  else if constexpr (is_record_vector<T>::value) {
    Json out = Json::array();
    for (const auto& e : v) out.push_back(write_record<Json>(e));
    return out;
  } else if constexpr (is_map<T>::value) {
    Json out = Json::object();
    for (const auto& [key, e] : v) out[key] = write_record<Json>(e);
    return out;
  } else return v;
}

template <class R>
R read_record(const json& v, const std::string& path);

template <class T>
T read_value(const json& v, const std::string& path, const Allowed& allowed) {
  if constexpr (has_codec<T>::value) return Codec<T>::read(v, path);
  else if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) wrong_type(path, "true or false", v);
    return v.get<bool>();
  } else if constexpr (std::is_same_v<T, uint64_t>) return read_uint64(v, path);
  else if constexpr (std::is_same_v<T, int>) return read_int(v, path);
  else if constexpr (std::is_same_v<T, int64_t>) return read_int64(v, path);
  else if constexpr (std::is_same_v<T, double>) {
    if (!v.is_number()) wrong_type(path, "a number", v);
    return v.get<double>();
  } else if constexpr (std::is_same_v<T, std::string>) return read_string(v, path);
  else if constexpr (has_enum_names<T>::value) {
    const std::string& name = read_string(v, path);
    if (auto e = enum_from_name<T>(name)) return *e;
    reject(path, quoted(name) + " is not " + EnumNames<T>::what + " (" + enum_choices<T>() + ")");
  } else if constexpr (is_record<T>::value) return read_record<T>(v, path);
  else if constexpr (is_vector<T>::value) {
    const auto* most = std::get_if<allow::AtMost>(&allowed);
    if (!v.is_array()) {
      const std::string what = std::is_same_v<T, std::vector<std::string>> ? "an array of strings"
                               : most ? std::string("an array of ") + most->noun : "an array";
      wrong_type(path, what.c_str(), v);
    }
    if (most && v.size() > most->items)
      reject(path, std::to_string(v.size()) + " " + most->noun + ", over the limit of " + std::to_string(most->items));
    T out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      out.push_back(read_value<typename T::value_type>(v[i], element(path, i), allow::Any{}));
    return out;
  } else if constexpr (is_map<T>::value) {
    if (!v.is_object()) wrong_type(path, "an object of module path -> options", v);
    T out;
    for (const auto& [key, e] : v.items()) out[key] = read_record<typename T::mapped_type>(e, keyed(path, key));
    return out;
  }
}

// ---- records ------------------------------------------------------------------------------------

template <class T>
constexpr bool omitted_when_empty() {
  if constexpr (has_codec<T>::value) return Codec<T>::omit_when_empty;
  else return false;
}

template <class Json>
struct Writer {
  Json& out;
  template <class T>
  void operator()(const char* key, const T& v, const Allowed&, const char*) {
    if constexpr (is_optional<T>::value) {
      if (v) out[key] = write_value<Json>(*v);  // absent stays absent: [] and absent differ
    } else if constexpr (omitted_when_empty<T>()) {
      if (!v.empty()) out[key] = write_value<Json>(v);
    } else {
      out[key] = write_value<Json>(v);
    }
  }
};

template <class Json, class R>
Json write_record(const R& record) {
  Json out = Json::object();
  Writer<Json> w{out};
  Fields<R>::visit(record, w);
  return out;
}

// Rejects a non-object, or any key not in `keys`, naming the ones it takes.
inline void reject_unknown_keys(const json& v, const std::string& path, const std::vector<const char*>& keys) {
  if (!v.is_object()) wrong_type(path, "an object", v);
  for (const auto& [key, value] : v.items()) {
    bool ok = false;
    for (const char* k : keys) ok = ok || key == k;
    if (ok) continue;
    std::string list;
    for (const char* k : keys) list += std::string(list.empty() ? "" : ", ") + k;
    reject(is_identifier(key) ? member(path, key.c_str()) : keyed(path, key), "unknown key (expected one of " + list + ")");
  }
}

struct KeyList {
  std::vector<const char*> keys;
  template <class T>
  void operator()(const char* key, const T&, const Allowed&, const char*) { keys.push_back(key); }
};

// Rejects any key the record does not list, naming the ones it does.
template <class R>
void check_known_keys(const json& v, const std::string& path, std::initializer_list<const char*> extra = {}) {
  KeyList known;
  known.keys.assign(extra.begin(), extra.end());
  const R defaults{};
  Fields<R>::visit(defaults, known);
  reject_unknown_keys(v, path, known.keys);
}

// Reads the record's present keys over its defaults; an absent optional field is empty.
struct Reader {
  const json& object;
  const std::string& path;
  template <class T>
  void operator()(const char* key, T& field, const Allowed& allowed, const char*) {
    const auto it = object.find(key);
    if constexpr (is_optional<T>::value) {
      if (it == object.end()) field.reset();
      else field = read_value<typename T::value_type>(*it, member(path, key), allowed);
    } else if (it != object.end()) {
      field = read_value<T>(*it, member(path, key), allowed);
    }
  }
};

template <class R>
R read_record(const json& v, const std::string& path) {
  check_known_keys<R>(v, path);
  R record{};
  Reader r{v, path};
  Fields<R>::visit(record, r);
  return record;
}

// ---- checks -------------------------------------------------------------------------------------

template <class R>
void check_record(const R& record, const std::string& path);

template <class T>
void check_value(const T& v, const std::string& path, const Allowed& allowed) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (const auto* r = std::get_if<allow::Between>(&allowed);
        r && (static_cast<int64_t>(v) < r->lo || static_cast<int64_t>(v) > r->hi))
      reject(path, std::to_string(v) + " outside [" + std::to_string(r->lo) + ", " + std::to_string(r->hi) + "]");
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::holds_alternative<allow::Positive>(allowed) && !(std::isfinite(v) && v > 0))
      reject(path, show(v) + " must be finite and > 0");
    if (std::holds_alternative<allow::NonNegative>(allowed) && !(std::isfinite(v) && v >= 0))
      reject(path, show(v) + " must be finite and >= 0");
    if (std::holds_alternative<allow::Fraction>(allowed) && !(v >= 0 && v < 1)) reject(path, show(v) + " outside [0, 1)");
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (const auto* one = std::get_if<allow::OneOf>(&allowed)) {
      std::string list;
      for (const auto& n : one->names()) {
        if (n == v) return;
        list += (list.empty() ? "" : ", ") + n;
      }
      reject(path, quoted(v) + " is not " + one->what + " (" + list + ")");
    }
  } else if constexpr (has_enum_names<T>::value) {
    if (!is_named(v)) reject(path, "unknown " + without_article(EnumNames<T>::what) + " (" + enum_choices<T>() + ")");
  } else if constexpr (is_optional<T>::value) {
    if (v) check_value(*v, path, allowed);
  } else if constexpr (has_codec<T>::value) {
    Codec<T>::check(path, v);
  } else if constexpr (is_record<T>::value) {
    check_record(v, path);
  } else if constexpr (is_vector<T>::value) {
    if (const auto* most = std::get_if<allow::AtMost>(&allowed); most && v.size() > most->items)
      reject(path, std::to_string(v.size()) + " " + most->noun + ", over the limit of " + std::to_string(most->items));
    if constexpr (is_record<typename T::value_type>::value)
      for (std::size_t i = 0; i < v.size(); ++i) check_record(v[i], element(path, i));
  } else if constexpr (is_map<T>::value) {
    for (const auto& [key, e] : v) check_record(e, keyed(path, key));
  }
}

struct Checker {
  const std::string& path;
  template <class T>
  void operator()(const char* key, const T& v, const Allowed& allowed, const char*) {
    check_value(v, member(path, key), allowed);
  }
};

template <class R>
void check_record(const R& record, const std::string& path) {
  Checker c{path};
  Fields<R>::visit(record, c);
}

}  // namespace shardfuzz::harness::fields_detail
