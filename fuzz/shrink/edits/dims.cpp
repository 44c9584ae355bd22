// Edits of the model's dims: the generator's smaller values (fuzz/gen/ladders.h), one head, top-1.
#include "fuzz/gen/ladders.h"
#include "fuzz/shrink/edits/helpers.h"

#include <cstdint>
#include <utility>

namespace shardfuzz::fuzz::shrinking::edits {

namespace {

namespace ladders = gen::ladders;

// Values below `v` worth trying, smallest first: the ladder's values below v, and v / 2 when v is
// above all of them.
std::vector<int64_t> smaller(int64_t v, const ladders::Ladder<int64_t>& ladder) {
  const std::vector<int64_t> usual = ladders::values(ladder);
  std::vector<int64_t> out;
  for (int64_t u : usual)
    if (u < v) out.push_back(u);
  if (!usual.empty() && v > usual.back() && v / 2 > usual.back()) out.push_back(v / 2);
  return out;
}

// `field` of the dims set to the ladder's simplest value, unless it is at most that.
Candidates simplest_dim(const Scenario& sc, int64_t harness::Dims::*field, const ladders::Ladder<int64_t>& ladder) {
  const int64_t simplest = ladders::simplest(ladder);
  if (sc.dims.*field <= simplest) return {};
  return {with(sc, [&](Scenario& s) { s.dims.*field = simplest; })};
}

}  // namespace

// dim, hidden, experts, tokens in turn, each down the generator's ladder.
Candidates smaller_dims(const Scenario& sc) {
  using Dim = int64_t harness::Dims::*;
  const std::pair<Dim, const ladders::Ladder<int64_t>&> dims[] = {{&harness::Dims::dim, ladders::kDim},
                                                                   {&harness::Dims::hidden, ladders::kHidden},
                                                                   {&harness::Dims::experts, ladders::kExperts},
                                                                   {&harness::Dims::tokens, ladders::kTokens}};
  Candidates out;
  for (const auto& [field, ladder] : dims)
    for (int64_t v : smaller(sc.dims.*field, ladder)) out.push_back(with(sc, [&](Scenario& s) { s.dims.*field = v; }));
  return out;
}

Candidates top_k_1(const Scenario& sc) { return simplest_dim(sc, &harness::Dims::top_k, ladders::kTopK); }

Candidates one_head(const Scenario& sc) { return simplest_dim(sc, &harness::Dims::heads, ladders::kHeads); }

}  // namespace shardfuzz::fuzz::shrinking::edits
