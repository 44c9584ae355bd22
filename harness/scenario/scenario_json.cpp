// Scenario <-> JSON. The reader never trusts its input: it checks each value's type before reading
// it, names the JSON path of what it rejects, never dumps a whole (possibly huge or deep) value
// into a message, and leaves the size budget to Scenario::validate, which runs before anything is
// built.
#include "harness/scenario/scenario_json.h"

#include "harness/scenario/quoted.h"
#include "harness/scenario/codecs.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include <sys/stat.h>

namespace shardfuzz::harness {

const char* block_kind_name(BlockSpec::Kind k) { return name_of(k); }

namespace {

using nlohmann::json;

// ---- writing ----------------------------------------------------------------------------------

// Templated so that to_json (sorted keys) and to_json_text ("schema" first, insertion order) share
// the field list.
template <class Json>
Json build(const Scenario& s) {
  Json j = Json::object();
  j["schema"] = s.schema;
  fields_detail::Writer<Json> w{j};
  Fields<Scenario>::visit(s, w);
  return j;
}

// ---- paths and messages -----------------------------------------------------------------------

// `world_size`, `dims.dim`, `blocks[1].gated`, `fully_shard["layers.0"].mesh`: fully_shard's keys
// are module paths, always bracketed (as are keys that are no identifier).
std::string member_path(const std::string& parent, const std::string& key) {
  if (parent != "fully_shard" && fields_detail::is_identifier(key)) return parent.empty() ? key : parent + "." + key;
  return parent + "[" + quoted(key) + "]";
}

using fields_detail::reject;

// ---- reading ----------------------------------------------------------------------------------

Scenario read_scenario(const json& j) {
  if (!j.is_object()) fields_detail::wrong_type("", "an object", j);
  // The schema first: a newer file's new keys should say "schema 2", not "unknown key".
  const auto schema = j.find("schema");
  if (schema == j.end()) reject("schema", "missing (required; this build reads schema " + std::to_string(kScenarioSchema) + ")");
  const int version = fields_detail::read_int(*schema, "schema");
  if (version != kScenarioSchema)
    reject("schema", std::to_string(version) + " is not supported (this build reads schema " +
                         std::to_string(kScenarioSchema) + ")");
  fields_detail::check_known_keys<Scenario>(j, "", {"schema"});
  Scenario s;
  fields_detail::Reader r{j, ""};
  Fields<Scenario>::visit(s, r);
  return s;
}

// A DOM builder for nlohmann's SAX parser that also rejects what the DOM parser would let through
// silently (a duplicate key: the last one would win) or dangerously (unbounded nesting), naming
// the JSON path.
class StrictDomBuilder {
 public:
  explicit StrictDomBuilder(json& root) : root_(root) {}

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(json::number_integer_t v) { return put(v); }
  bool number_unsigned(json::number_unsigned_t v) { return put(v); }
  bool number_float(json::number_float_t v, const json::string_t&) { return put(v); }
  bool string(json::string_t& v) { return put(std::move(v)); }
  bool binary(json::binary_t& v) { return put(json::binary(std::move(v))); }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& k) {
    Frame& f = stack_.back();
    if (f.value->contains(k)) reject(member_path(f.path, k), "duplicate key");
    f.key = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    std::string what = ex.what();
    const auto bracket = what.find("] ");  // drop nlohmann's "[json.exception.parse_error.101] "
    if (!what.empty() && what[0] == '[' && bracket != std::string::npos) what = what.substr(bracket + 2);
    // "last read: '...'" quotes the whole bad token, which may be an unterminated megabyte string.
    constexpr std::size_t kMaxShown = 300;
    if (what.size() > kMaxShown) what = what.substr(0, kMaxShown) + "...";
    throw std::invalid_argument("scenario: invalid JSON at byte " + std::to_string(position) + ": " + what);
  }

 private:
  struct Frame {
    json* value;
    std::string path;
    std::string key;  // objects: the key whose value comes next
  };

  // Where the next value goes, and its path.
  std::pair<json*, std::string> slot(json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return {&root_, ""};
    }
    Frame& f = stack_.back();
    if (f.value->is_object()) {
      json& member = (*f.value)[f.key];
      member = std::move(v);
      return {&member, member_path(f.path, f.key)};
    }
    // Only the innermost container grows, so pointers to enclosing elements stay valid.
    f.value->push_back(std::move(v));
    return {&f.value->back(), fields_detail::element(f.path, f.value->size() - 1)};
  }
  bool put(json v) {
    slot(std::move(v));
    return true;
  }
  bool open(json container) {
    auto [value, path] = slot(std::move(container));
    if (stack_.size() >= static_cast<std::size_t>(ScenarioTextLimits::kMaxDepth))
      reject(path, "nested deeper than " + std::to_string(ScenarioTextLimits::kMaxDepth) + " levels");
    stack_.push_back({value, std::move(path), {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  json& root_;
  std::vector<Frame> stack_;
};

}  // namespace

json to_json(const Scenario& scenario) { return build<json>(scenario); }

std::string to_json_text(const Scenario& scenario) {
  return build<nlohmann::ordered_json>(scenario).dump(2, ' ', false, json::error_handler_t::replace);
}

Scenario scenario_from_json(const json& j) {
  Scenario s;
  try {
    s = read_scenario(j);
  } catch (const json::exception& e) {
    // Every access is type-checked first; this only keeps the "invalid_argument or runtime_error"
    // promise should one slip through.
    throw std::invalid_argument(std::string("scenario: ") + e.what());
  }
  s.validate();
  return s;
}

Scenario parse_scenario(const std::string& text) {
  if (text.size() > ScenarioTextLimits::kMaxBytes)
    throw std::invalid_argument("scenario: the text is " + std::to_string(text.size()) + " bytes, over the limit of " +
                                std::to_string(ScenarioTextLimits::kMaxBytes));
  json root;
  StrictDomBuilder builder(root);
  try {
    json::sax_parse(text, &builder);
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("scenario: invalid JSON: ") + e.what());
  }
  return scenario_from_json(root);
}

Scenario load_scenario(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw std::runtime_error(path + ": is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open (" + std::strerror(errno) + ")");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) throw std::runtime_error(path + ": cannot read (not a regular file?)");
  if (static_cast<uint64_t>(size) > ScenarioTextLimits::kMaxBytes)
    throw std::invalid_argument(path + ": the file is " + std::to_string(size) + " bytes, over the limit of " +
                                std::to_string(ScenarioTextLimits::kMaxBytes));
  in.seekg(0, std::ios::beg);
  std::string text(static_cast<std::size_t>(size), '\0');
  if (!in.read(text.data(), size)) throw std::runtime_error(path + ": read failed (" + std::strerror(errno) + ")");
  try {
    return parse_scenario(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

}  // namespace shardfuzz::harness
