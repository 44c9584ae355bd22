// .campaign.json: schema "shardfuzz-campaign/2" (the state's field list), and schema 1 read back.
#include "fuzz/campaign/state.h"

#include "harness/files/write_file.h"
#include "fuzz/campaign/limits_codec.hpp"

#include <nlohmann/json.hpp>

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace shardfuzz::fuzz {
namespace {

using nlohmann::json;
constexpr const char* kSchema = "shardfuzz-campaign/2";
constexpr const char* kSchemaV1 = "shardfuzz-campaign/1";

// Schema 1 kept the plan's keys at the top, flat: move each into its place in schema 2. Keys it
// does not know stay where they are, so the strict reader names them.
json from_schema_1(json j) {
  json plan = json::object();
  const auto move = [&](const char* from, json& into, const char* to) {
    if (j.contains(from)) {
      if (!j[from].is_null()) into[to] = j[from];
      j.erase(from);
    }
  };
  for (const char* key : {"seed", "gen", "cases", "seconds", "keep_going", "recover", "until_row", "differential",
                          "torch_as", "coverage_guided", "command", "jobs", "shrink_workers", "stop_file", "findings_db",
                          "findings_run", "corpus"})
    move(key, plan, key);
  json shrink = json::object();
  move("shrink_steps", shrink, "max_steps");
  move("shrink_seconds", shrink, "max_seconds");
  plan["shrink"] = shrink;
  if (j.contains("shard") && j["shard"].is_object()) {
    plan["shard_index"] = j["shard"].value("index", json(0));
    plan["shard_count"] = j["shard"].value("count", json(1));
    j.erase("shard");
  }
  json limits = json::object();
  move("case_timeout_ms", limits, "case_timeout_ms");
  move("case_memory_bytes", limits, "case_memory_bytes");
  const bool isolate = !j.contains("isolate") || j["isolate"] == true;
  j.erase("isolate");
  if (isolate) plan["isolation"] = limits;
  j["plan"] = plan;
  return j;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("no campaign state at " + path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::parse_error& e) {
    throw std::invalid_argument(path + ": not JSON: " + e.what());
  }
}

}  // namespace

std::string campaign_state_path(const std::string& dir) { return dir + "/" + kCampaignStateFile; }

void save_campaign_state(const std::string& dir, const CampaignState& s) {
  json j = {{"schema", kSchema}};
  j.update(harness::fields_detail::write_record<json>(s));
  harness::write_file_atomically(campaign_state_path(dir), j.dump(2) + "\n");
}

CampaignState load_campaign_state(const std::string& dir) {
  const std::string path = campaign_state_path(dir);
  json j;
  try {
    j = read_json(path);
  } catch (const std::runtime_error& e) {  // missing or unreadable (malformed is std::invalid_argument)
    throw std::runtime_error(std::string("--resume: ") + e.what() + " (was the campaign run with --out " + dir + "?)");
  }
  if (!j.is_object()) throw std::invalid_argument(path + ": not a JSON object");
  const json schema = j.contains("schema") ? j["schema"] : json(nullptr);
  if (schema != kSchema && schema != kSchemaV1)
    throw std::invalid_argument(path + ": schema: " + schema.dump() + " is not " + kSchema);
  if (schema == kSchemaV1) j = from_schema_1(std::move(j));
  j.erase("schema");
  try {
    CampaignState s = harness::fields_detail::read_record<CampaignState>(j, "");
    check_plan(s.plan, {false, "plan."});
    return s;
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

int remove_stale_temporaries(const std::string& dir) {
  // POSIX, not std::filesystem (harness/files/temp_dir.h says why).
  int removed = 0;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.find(".tmp.") != std::string::npos && ::unlink((dir + "/" + name).c_str()) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

}  // namespace shardfuzz::fuzz
