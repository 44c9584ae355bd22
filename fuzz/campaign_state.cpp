// .campaign.json: schema "shardfuzz-campaign/1".
#include "fuzz/campaign_state.h"

#include "harness/files/write_file.h"
#include "harness/reproducer.h"

#include <nlohmann/json.hpp>

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace shardfuzz::fuzz {
namespace {

using nlohmann::json;
constexpr const char* kSchema = "shardfuzz-campaign/1";

template <class T>
T field(const json& j, const std::string& key, const std::string& where) {
  if (!j.contains(key)) throw std::invalid_argument(where + key + ": missing");
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    throw std::invalid_argument(where + key + ": " + j.at(key).dump() + " has the wrong type");
  }
}

}  // namespace

std::string campaign_state_path(const std::string& dir) { return dir + "/" + kCampaignStateFile; }

void save_campaign_state(const std::string& dir, const CampaignState& s) {
  json findings = json::array();
  for (const auto& f : s.findings)
    findings.push_back({{"case", f.case_index}, {"case_seed", f.case_seed}, {"property", f.property}, {"path", f.path},
                        {"zoo", f.zoo}});
  const CampaignPlan& p = s.plan;
  json j = {{"schema", kSchema},
            {"seed", p.seed},
            {"gen", {{"world", p.gen.world}, {"max_world", p.gen.max_world}, {"profile", p.gen.profile}, {"max_blocks", p.gen.max_blocks},
                     {"max_steps", p.gen.max_steps}, {"faults", p.gen.faults}, {"fault_kinds", p.gen.fault_kinds}}},
            {"cases", p.cases ? json(*p.cases) : json(nullptr)},
            {"seconds", p.seconds ? json(*p.seconds) : json(nullptr)},
            {"shrink_steps", p.shrink_budget.max_steps},
            {"shrink_seconds", p.shrink_budget.max_seconds},
            {"keep_going", p.keep_going},
            {"recover", p.recover},
            {"until_row", p.until_row},
            {"differential", p.differential},
            {"torch_as", p.torch_as},
            {"coverage_guided", p.coverage_guided},
            {"corpus", p.corpus_dir},
            {"command", p.command},
            {"backend", s.backend},
            {"isolate", p.isolation.has_value()},
            {"case_timeout_ms", p.isolation ? p.isolation->wall.count() : 0},
            {"case_memory_bytes", p.isolation ? p.isolation->memory_bytes : 0},
            {"shard", {{"index", p.shard_index}, {"count", p.shard_count}}},
            {"jobs", p.jobs},
            {"shrink_workers", p.shrink_workers},
            {"stop_file", p.stop_file},
            {"findings_db", p.findings_db},
            {"findings_run", p.findings_run},
            {"next_case", s.next_case},
            {"cases_run", s.cases_run},
            {"elapsed_seconds", s.elapsed_seconds},
            {"sessions", s.sessions},
            {"finished", s.finished},
            {"findings", findings}};
  harness::write_file_atomically(campaign_state_path(dir), j.dump(2) + "\n");
}

CampaignState load_campaign_state(const std::string& dir) {
  const std::string path = campaign_state_path(dir);
  std::ifstream in(path);
  if (!in) throw std::runtime_error("--resume: no campaign state at " + path + " (was the campaign run with --out " + dir + "?)");
  std::stringstream text;
  text << in.rdbuf();
  json j;
  try {
    j = json::parse(text.str());
  } catch (const json::parse_error& e) {
    throw std::invalid_argument(path + ": not JSON: " + e.what());
  }
  const std::string w = path + ": ";
  if (!j.is_object()) throw std::invalid_argument(w + "not a JSON object");
  if (field<std::string>(j, "schema", w) != kSchema)
    throw std::invalid_argument(w + "schema: " + j["schema"].dump() + " is not " + kSchema);
  CampaignState s;
  CampaignPlan& p = s.plan;
  p.seed = field<uint64_t>(j, "seed", w);
  const json gen = field<json>(j, "gen", w);
  p.gen.world = field<int>(gen, "world", w + "gen.");
  p.gen.max_world = gen.contains("max_world") ? field<int>(gen, "max_world", w + "gen.") : 8;
  p.gen.profile = field<std::string>(gen, "profile", w + "gen.");
  p.gen.max_blocks = field<int>(gen, "max_blocks", w + "gen.");
  p.gen.max_steps = field<int>(gen, "max_steps", w + "gen.");
  p.gen.faults = field<bool>(gen, "faults", w + "gen.");
  p.gen.fault_kinds = field<std::vector<std::string>>(gen, "fault_kinds", w + "gen.");
  if (!j.contains("cases") || !j.contains("seconds")) throw std::invalid_argument(w + "cases, seconds: missing");
  if (!j["cases"].is_null()) p.cases = field<int>(j, "cases", w);
  if (!j["seconds"].is_null()) p.seconds = field<double>(j, "seconds", w);
  p.shrink_budget = {field<int>(j, "shrink_steps", w), field<double>(j, "shrink_seconds", w)};
  p.keep_going = field<bool>(j, "keep_going", w);
  p.recover = j.contains("recover") ? field<bool>(j, "recover", w) : true;  // absent before recovery existed
  p.until_row = field<std::string>(j, "until_row", w);
  p.differential = j.contains("differential") ? field<bool>(j, "differential", w) : false;  // absent before it existed
  p.torch_as = j.contains("torch_as") ? field<std::string>(j, "torch_as", w) : "";
  p.coverage_guided = j.contains("coverage_guided") ? field<bool>(j, "coverage_guided", w) : false;  // absent before it existed
  p.corpus_dir = j.contains("corpus") ? field<std::string>(j, "corpus", w) : "";
  p.command = field<std::string>(j, "command", w);
  s.backend = field<std::string>(j, "backend", w);
  const bool isolate = field<bool>(j, "isolate", w);
  const harness::isolation::Limits limits{std::chrono::milliseconds(field<int>(j, "case_timeout_ms", w)),
                                          field<int64_t>(j, "case_memory_bytes", w)};
  if (isolate) p.isolation = limits;
  else p.isolation.reset();
  if (j.contains("shard")) {  // absent before fleets existed
    const json shard = field<json>(j, "shard", w);
    p.shard_index = field<int>(shard, "index", w + "shard.");
    p.shard_count = field<int>(shard, "count", w + "shard.");
    if (p.shard_count < 1 || p.shard_index < 0 || p.shard_index >= p.shard_count)
      throw std::invalid_argument(w + "shard: " + shard.dump() + " is not an index I in [0, N) of N >= 1 shards");
  }
  p.jobs = j.contains("jobs") ? field<int>(j, "jobs", w) : 1;
  if (p.jobs < 1) throw std::invalid_argument(w + "jobs: " + std::to_string(p.jobs) + " is below 1");
  p.shrink_workers = j.contains("shrink_workers") ? field<int>(j, "shrink_workers", w) : 1;
  if (p.shrink_workers < 1 || p.shrink_workers > 1024)
    throw std::invalid_argument(w + "shrink_workers: " + std::to_string(p.shrink_workers) + " is outside 1-1024");
  p.stop_file = j.contains("stop_file") ? field<std::string>(j, "stop_file", w) : "";
  p.findings_db = j.contains("findings_db") ? field<std::string>(j, "findings_db", w) : "";
  p.findings_run = j.contains("findings_run") ? field<int64_t>(j, "findings_run", w) : 0;
  s.next_case = field<int>(j, "next_case", w);
  if (s.next_case < 0) throw std::invalid_argument(w + "next_case: " + std::to_string(s.next_case) + " is negative");
  s.cases_run = j.contains("cases_run") ? field<int>(j, "cases_run", w) : -1;
  s.elapsed_seconds = field<double>(j, "elapsed_seconds", w);
  s.sessions = field<int>(j, "sessions", w);
  s.finished = field<bool>(j, "finished", w);
  const json findings = field<json>(j, "findings", w);
  if (!findings.is_array()) throw std::invalid_argument(w + "findings: not an array");
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const std::string fw = w + "findings[" + std::to_string(i) + "].";
    CampaignFindingEntry f;
    f.case_index = field<int>(findings[i], "case", fw);
    f.case_seed = field<uint64_t>(findings[i], "case_seed", fw);
    f.property = field<std::string>(findings[i], "property", fw);
    f.path = field<std::string>(findings[i], "path", fw);
    f.zoo = field<std::string>(findings[i], "zoo", fw);
    s.findings.push_back(std::move(f));
  }
  return s;
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
