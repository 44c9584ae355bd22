// Dims and steps.
#include "fuzz/gen/dims.h"

#include "fuzz/gen/choice.h"
#include "fuzz/gen/ladders.h"

#include <rapidcheck/gen/Build.h>

#include <stdexcept>
#include <string>

namespace shardfuzz::fuzz::gen {

rc::Gen<harness::Dims> dims() {
  using harness::Dims;
  return rc::gen::build<Dims>(
      rc::gen::set(&Dims::dim, weighted_choice(ladders::kDim)),
      rc::gen::set(&Dims::hidden, weighted_choice(ladders::kHidden)),
      rc::gen::set(&Dims::experts, weighted_choice(ladders::kExperts)),
      rc::gen::set(&Dims::tokens, weighted_choice(ladders::kTokens)),
      rc::gen::set(&Dims::heads, weighted_choice(ladders::kHeads)),
      rc::gen::set(&Dims::top_k, weighted_choice(ladders::kTopK)),
      rc::gen::set(&Dims::vocab, weighted_choice(ladders::kVocab)),
      rc::gen::set(&Dims::lora_rank, weighted_choice(ladders::kLoraRank)));
}

rc::Gen<int> steps(int max_steps) {
  if (max_steps < 1) throw std::invalid_argument("GenConfig.max_steps: " + std::to_string(max_steps) + " must be >= 1");
  std::vector<std::pair<std::size_t, int>> options;
  for (int s = 1; s <= max_steps; ++s) options.push_back({s == 2 ? 2u : 1u, s});
  return weighted_choice<int>(std::move(options));
}

}  // namespace shardfuzz::fuzz::gen
