// Where a campaign's cases come from, behind one draw: the generator (case k from its own seed), or
// coverage guidance (fuzz/campaign/guidance.h: the corpus replayed first, then half generated and
// half structure-aware mutants of corpus scenarios).
#pragma once

#include "fuzz/gen/gen_config.h"
#include "harness/scenario/scenario.h"

#include <rapidcheck/Shrinkable.h>

#include <cstdint>
#include <string>

namespace shardfuzz::fuzz {

// The seed and size of case k of a campaign seeded with `seed`: case k depends on them alone.
uint64_t case_seed(uint64_t campaign_seed, int k);
int case_size(int k);

struct Draw {
  enum class Origin { Generated, Replayed, Mutant };
  rc::Shrinkable<harness::Scenario> shrinkable;
  Origin origin = Origin::Generated;
  std::string from;  // Replayed: the corpus file; Mutant: "FILE: edit, edit"
  // "generated", "replay of FILE", "mutant of FILE: edits".
  std::string describe() const;
};

class CaseSource {
 public:
  virtual ~CaseSource() = default;
  // What case k (its seed and size) runs.
  virtual Draw draw(uint64_t seed, int size) = 0;
  // After case k ran (and whatever its check ran).
  virtual void after_case(const harness::Scenario& /*scenario*/, int /*k*/, uint64_t /*seed*/) {}
};

// The generator alone: case k is (seed, size) drawn, nothing else.
class GeneratorSource : public CaseSource {
 public:
  explicit GeneratorSource(GenConfig gen) : gen_(std::move(gen)) {}
  Draw draw(uint64_t seed, int size) override;

 private:
  GenConfig gen_;
};

}  // namespace shardfuzz::fuzz
