// Coverage guidance (fuzz/campaign/guidance.h).
#include "fuzz/campaign/guidance.h"

#include "fuzz/coverage/edge_map.h"
#include "fuzz/gen/generate.h"
#include "fuzz/mutate/mutate.h"
#include "fuzz/shrink/shrink.h"
#include "harness/files/json_files.h"
#include "harness/files/write_file.h"
#include "harness/scenario/scenario_json.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace shardfuzz::fuzz {
namespace {

bool is_folder(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

uint64_t mixed(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

Guidance::Guidance(GenConfig gen, std::string corpus_dir, std::ostream& out, std::string report_dir)
    : gen_(std::move(gen)), corpus_dir_(std::move(corpus_dir)), out_(out), report_dir_(std::move(report_dir)) {
  if (corpus_dir_.empty() || !is_folder(corpus_dir_)) return;
  for (const std::string& file : harness::json_files_in(corpus_dir_, "corpus")) {
    try {
      std::ifstream in(file);
      std::stringstream text;
      text << in.rdbuf();
      harness::Scenario s = harness::parse_scenario(text.str());
      if (!gen_.profile.empty()) s.profile = semantics::Profile::named(gen_.profile);
      if (gen_.world > 0 && s.world_size != gen_.world) continue;  // this campaign pins another world
      to_replay_.push_back(corpus_.size());
      corpus_.push_back({std::move(s), base_name(file)});
    } catch (const std::exception& e) {
      out << "fuzz: corpus: skipping " << file << ": " << e.what() << "\n";
    }
  }
  out << "fuzz: corpus " << corpus_dir_ << ": " << corpus_.size() << " scenario(s) to replay first\n";
}

Draw Guidance::draw(uint64_t seed, int size) {
  coverage::clear_edges();
  if (!guided()) return {generate_shrinkable(gen_, seed, size), Draw::Origin::Generated, ""};
  if (!to_replay_.empty()) {
    const Entry& e = corpus_[to_replay_.front()];
    to_replay_.pop_front();
    ++cases_by_origin_["replayed"];
    return {shrinkable_from(e.scenario), Draw::Origin::Replayed, e.file};
  }
  // Half of the cases mutate a corpus scenario, once there is one.
  const uint64_t r = mixed(seed);
  if (corpus_.empty() || r % 2 == 0) {
    ++cases_by_origin_["generated"];
    return {generate_shrinkable(gen_, seed, size), Draw::Origin::Generated, ""};
  }
  const Entry& parent = corpus_[(r >> 1) % corpus_.size()];
  Mutant m = mutate(parent.scenario, seed, gen_);
  ++cases_by_origin_["mutated"];
  std::string edits;
  for (const auto& e : m.edits) edits += (edits.empty() ? "" : ", ") + e;
  return {shrinkable_from(m.scenario), Draw::Origin::Mutant, parent.file + ": " + edits};
}

void Guidance::on_end(CampaignResult&) {
  const nlohmann::json s = summary();
  if (!report_dir_.empty()) harness::write_file_atomically(report_dir_ + "/coverage.json", s.dump(2) + "\n");
  out_ << describe(s) << "\n" << std::flush;
}

int Guidance::merge_edges(const harness::Scenario& scenario, int k, uint64_t seed) {
  const int fresh = coverage::merge_new_edges(seen_);
  if (fresh == 0 || !guided()) return fresh;
  const std::string file = "case-" + std::to_string(k) + "-" + std::to_string(seed % 1000000) + ".json";
  harness::write_file_atomically(corpus_dir_ + "/" + file, harness::to_json_text(scenario) + "\n");
  corpus_.push_back({scenario, file});
  ++added_;
  return fresh;
}

int Guidance::edges() const { return coverage::count_edges(seen_); }

nlohmann::json Guidance::summary() const {
  nlohmann::json j = {{"instrumented", coverage::instrumented()}, {"edges", edges()}, {"guided", guided()}};
  const auto blocks = coverage::blocks_reached();
  j["blocks_reached"] = blocks.size();
  j["blocks_by_folder"] = coverage::blocks_by_folder(blocks);
  j["edges_by_folder"] = coverage::edges_by_folder(seen_);
  if (guided()) {
    j["corpus"] = {{"dir", corpus_dir_}, {"scenarios", corpus_.size()}, {"added", added_}};
    j["cases_by_origin"] = cases_by_origin_;
  }
  return j;
}

std::string Guidance::describe(const nlohmann::json& s) {
  std::string line = "fuzz: coverage: " + std::to_string(s.value("edges", 0)) + " edges, " +
                     std::to_string(s.value("blocks_reached", 0)) + " blocks reached";
  std::string folders;
  const nlohmann::json edges = s.value("edges_by_folder", nlohmann::json::object());
  for (const auto& [folder, n] : s["blocks_by_folder"].items())
    folders += (folders.empty() ? "" : ", ") + folder + " " + std::to_string(edges.value(folder, 0)) + " edges/" +
               std::to_string(n.get<int>()) + " blocks";
  if (!folders.empty()) line += " (" + folders + ")";
  if (s.contains("corpus")) {
    line += "; corpus " + std::to_string(s["corpus"].value("scenarios", 0)) + " scenario(s), " +
            std::to_string(s["corpus"].value("added", 0)) + " added";
    std::string origins;
    for (const auto& [origin, n] : s["cases_by_origin"].items())
      origins += (origins.empty() ? "" : ", ") + std::to_string(n.get<int>()) + " " + origin;
    if (!origins.empty()) line += "; cases: " + origins;
  }
  return line;
}

}  // namespace shardfuzz::fuzz
