// Coverage guidance for a campaign, as libFuzzer does it for bytes: keep every scenario that
// reached runtime edges no earlier case reached (fuzz/coverage/edge_map.h) in a corpus folder, and
// spend half of the cases on structure-aware mutants of corpus scenarios (fuzz/mutate/mutate.h),
// the other half on the generator's draws. A corpus left by an earlier campaign (last night's) is
// replayed first, so its edges count as seen and its scenarios as parents. In a build with the
// hook and without --coverage-guided, the same object only counts the edges (the plain campaign's
// coverage, to compare with).
#pragma once

#include "fuzz/campaign/sink.h"
#include "fuzz/campaign/source.h"
#include "fuzz/gen/gen_config.h"
#include "harness/scenario/scenario.h"

#include <nlohmann/json.hpp>
#include <rapidcheck/Shrinkable.h>

#include <cstdint>
#include <deque>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace shardfuzz::fuzz {

// A case source, and a sink that reports the campaign's coverage at its end.
class Guidance : public CaseSource, public CampaignSink {
 public:
  // `corpus_dir` "": count edges only (no corpus, no mutants). Unreadable corpus files are named on
  // `out` and skipped. `report_dir` (when given): the campaign's end writes coverage.json there.
  Guidance(GenConfig gen, std::string corpus_dir, std::ostream& out, std::string report_dir = "");

  // What case k (seed, size) runs; clears the edge map for it.
  Draw draw(uint64_t seed, int size) override;
  // After the case ran (and whatever its check ran): merges its edges; a guided campaign keeps the
  // scenario in the corpus when it reached new ones.
  void after_case(const harness::Scenario& scenario, int k, uint64_t seed) override { merge_edges(scenario, k, seed); }
  // The same; returns the new edges.
  int merge_edges(const harness::Scenario& scenario, int k, uint64_t seed);
  // Prints the campaign's coverage and writes REPORT_DIR/coverage.json.
  void on_end(CampaignResult&) override;

  bool guided() const { return !corpus_dir_.empty(); }
  int edges() const;
  // The end-of-campaign figures: edges, blocks reached per runtime folder (addr2line), the corpus
  // and the cases by origin. One line for the progress output; JSON for OUT/coverage.json.
  nlohmann::json summary() const;
  static std::string describe(const nlohmann::json& summary);

 private:
  struct Entry {
    harness::Scenario scenario;
    std::string file;
  };
  GenConfig gen_;
  std::string corpus_dir_;
  std::ostream& out_;
  std::string report_dir_;
  std::vector<Entry> corpus_;
  std::deque<std::size_t> to_replay_;  // corpus entries loaded from disk, not yet run
  std::vector<uint8_t> seen_;
  std::map<std::string, int> cases_by_origin_;  // generated, mutated, replayed
  int added_ = 0;                               // corpus entries this session
};

}  // namespace shardfuzz::fuzz
