// Merging shard folders: check they are one campaign's, copy their reproducers, unite the states.
#include "fuzz/campaign/merge.h"

#include "fuzz/findings/findings_db.h"
#include "harness/files/read_file.h"
#include "harness/files/write_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace shardfuzz::fuzz {
namespace {

bool exists(const std::string& path) { return std::filesystem::exists(path); }

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec);
}

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string stem(const std::string& path) { return path.substr(0, path.rfind(".json")); }

// Copies a reproducer and what sits beside it into `out_dir`; the path it has there. A name taken
// by another shard's different file gets the shard's index appended.
std::string copy_reproducer(const std::string& path, int shard, const std::string& out_dir) {
  std::string target = out_dir + "/" + base_name(path);
  if (!exists(path)) return path;  // named in the state, never written (a shard killed mid-finding)
  if (same_file(target, path)) return path;
  if (exists(target) && harness::read_file_or_empty(target) != harness::read_file_or_empty(path))
    target = out_dir + "/" + stem(base_name(path)) + "-shard" + std::to_string(shard) + ".json";
  harness::write_file_atomically(target, harness::read_file_or_empty(path));
  for (const char* beside : {".html", ".snapshot.json"})
    if (exists(stem(path) + beside)) harness::write_file_atomically(stem(target) + beside, harness::read_file_or_empty(stem(path) + beside));
  return target;
}

std::string message_of(const std::string& reproducer) {
  try {
    return nlohmann::json::parse(harness::read_file_or_empty(reproducer)).value("message", "");
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace

MergedCampaign merge_campaigns(const std::vector<std::string>& dirs, const std::string& out_dir,
                               std::pair<int, int> as_shard) {
  if (dirs.empty()) throw std::invalid_argument("merge: no folders to merge");
  std::map<int, std::pair<std::string, CampaignState>> shards;  // by shard index
  for (const std::string& dir : dirs) {
    CampaignState st = load_campaign_state(dir);
    const CampaignPlan& first = shards.empty() ? st.plan : shards.begin()->second.second.plan;
    if (std::string d = plan_difference(first, st.plan); !d.empty())
      throw std::invalid_argument("merge: " + dir + " is not a shard of the campaign in " +
                                  (shards.empty() ? dir : shards.begin()->second.first) + ": " + d);
    const int index = st.plan.shard_index;
    if (shards.count(index))
      throw std::invalid_argument("merge: " + dir + " and " + shards[index].first + " are both shard " +
                                  std::to_string(index) + " of " + std::to_string(st.plan.shard_count));
    shards.emplace(index, std::make_pair(dir, std::move(st)));
  }
  std::filesystem::create_directories(out_dir);
  MergedCampaign m;
  const CampaignPlan& plan = shards.begin()->second.second.plan;
  m.shard_count = plan.shard_count;
  m.state.plan = plan;
  m.state.plan.shard_index = as_shard.first;
  m.state.plan.shard_count = as_shard.second;
  m.state.plan.stop_file.clear();
  m.state.backend = shards.begin()->second.second.backend;
  m.state.finished = true;
  for (int i = 0; i < m.shard_count; ++i)
    if (!shards.count(i)) m.shards_missing.push_back(i);
  for (auto& [index, entry] : shards) {
    auto& [dir, st] = entry;
    m.cases_run += st.cases_run >= 0 ? st.cases_run : st.plan.shard_cases_before(st.next_case);
    m.state.next_case = std::max(m.state.next_case, st.next_case);
    m.state.elapsed_seconds = std::max(m.state.elapsed_seconds, st.elapsed_seconds);
    if (!st.finished) m.shards_unfinished.push_back(index), m.state.finished = false;
    for (CampaignFindingEntry f : st.findings) {
      f.path = copy_reproducer(f.path, index, out_dir);
      m.state.findings.push_back(std::move(f));
    }
    const std::string db = dir + "/" + kFindingsDbFile;
    if (!same_file(dir, out_dir) && exists(db)) findings::FindingsDb(out_dir + "/" + kFindingsDbFile).merge_from(db);
  }
  std::stable_sort(m.state.findings.begin(), m.state.findings.end(),
                   [](const auto& a, const auto& b) { return a.case_index < b.case_index; });
  m.state.cases_run = m.cases_run;
  for (const auto& f : m.state.findings) m.messages.push_back(message_of(f.path));
  save_campaign_state(out_dir, m.state);
  return m;
}

}  // namespace shardfuzz::fuzz
