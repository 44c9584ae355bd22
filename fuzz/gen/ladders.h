// The generator's options for its numeric draws, simplest first, with their weights. The
// generator draws from these (weighted_choice) and the structural shrinker's edits step down
// them (fuzz/shrink/edits), so the values a shrink tries are the values the generator draws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace shardfuzz::fuzz::gen::ladders {

// (weight, value) pairs, simplest value first; weights only bias generation.
template <typename T>
using Ladder = std::vector<std::pair<std::size_t, T>>;

inline const Ladder<int64_t> kDim = {{1, 4}, {1, 6}, {2, 8}, {1, 12}, {2, 16}};
inline const Ladder<int64_t> kHidden = {{1, 4}, {2, 8}, {1, 12}};
inline const Ladder<int64_t> kExperts = {{1, 1}, {3, 2}, {1, 3}, {2, 4}};
inline const Ladder<int64_t> kTokens = {{1, 2}, {1, 3}, {2, 4}, {1, 8}};
inline const Ladder<int64_t> kHeads = {{2, 1}, {2, 2}, {1, 4}};
inline const Ladder<int64_t> kTopK = {{3, 1}, {2, 2}};
inline const Ladder<int64_t> kVocab = {{1, 8}, {1, 32}};
inline const Ladder<int64_t> kLoraRank = {{2, 1}, {2, 2}, {1, 4}};

inline const Ladder<int> kWorld = {{2, 1}, {4, 2}, {1, 3}, {4, 4}, {1, 5}, {1, 6}, {1, 7}, {2, 8}};
inline const Ladder<int> kExpertShardSize = {{9, 0}, {1, 1}, {2, 2}, {1, 3}, {1, 4}, {1, 8}};
inline const Ladder<int> kMicroBatches = {{6, 1}, {2, 2}, {1, 3}};
inline const Ladder<int> kForwardsPerBackward = {{6, 1}, {1, 2}};
// Both optimizers' decoupled weight decay (AdamW's param *= 1 - lr * wd; SGD's adds wd * param to
// the gradient): mostly off, as the default, but drawn, or a defect in either path never acts.
inline const Ladder<double> kWeightDecay = {{4, 0.0}, {1, 0.01}, {1, 0.1}};

// The values of a ladder, simplest first.
template <typename T>
std::vector<T> values(const Ladder<T>& ladder) {
  std::vector<T> out;
  for (const auto& option : ladder) out.push_back(option.second);
  return out;
}

// The value every draw of the ladder shrinks toward.
template <typename T>
T simplest(const Ladder<T>& ladder) {
  return ladder.front().second;
}

}  // namespace shardfuzz::fuzz::gen::ladders
