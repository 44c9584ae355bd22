// Dims and steps.
#include "fuzz/gen/dims.h"

#include "fuzz/gen/choice.h"

#include <rapidcheck/gen/Build.h>

#include <stdexcept>
#include <string>

namespace shardfuzz::fuzz::gen {

rc::Gen<harness::Dims> dims() {
  using harness::Dims;
  return rc::gen::build<Dims>(
      rc::gen::set(&Dims::dim, weighted_choice<int64_t>({{1, 4}, {1, 6}, {2, 8}, {1, 12}, {2, 16}})),
      rc::gen::set(&Dims::hidden, weighted_choice<int64_t>({{1, 4}, {2, 8}, {1, 12}})),
      rc::gen::set(&Dims::experts, weighted_choice<int64_t>({{1, 1}, {3, 2}, {1, 3}, {2, 4}})),
      rc::gen::set(&Dims::tokens, weighted_choice<int64_t>({{1, 2}, {1, 3}, {2, 4}, {1, 8}})),
      rc::gen::set(&Dims::heads, weighted_choice<int64_t>({{2, 1}, {2, 2}, {1, 4}})),
      rc::gen::set(&Dims::top_k, weighted_choice<int64_t>({{3, 1}, {2, 2}})),
      rc::gen::set(&Dims::vocab, weighted_choice<int64_t>({{1, 8}, {1, 32}})),
      rc::gen::set(&Dims::lora_rank, weighted_choice<int64_t>({{2, 1}, {2, 2}, {1, 4}})));
}

rc::Gen<int> steps(int max_steps) {
  if (max_steps < 1) throw std::invalid_argument("GenConfig.max_steps: " + std::to_string(max_steps) + " must be >= 1");
  std::vector<std::pair<std::size_t, int>> options;
  for (int s = 1; s <= max_steps; ++s) options.push_back({s == 2 ? 2u : 1u, s});
  return weighted_choice<int>(std::move(options));
}

}  // namespace shardfuzz::fuzz::gen
