// Deterministic parameter init from a per-model generator, so every rank and the unsharded
// reference build bit-identical models from one seed (LibTorch's default generator is
// process-global and rank threads would race on it).
//
// Every rank of a run, the reference beside it, and the blame and shrink runs of the same case
// draw the same weights from the same seed: the process keeps the draws of the few most recently
// used seeds (DrawCache), and an Init whose draw is there copies it instead of drawing again. The
// copy is made on the calling thread, so a rank's allocator counts it exactly as it counted the
// draw; the kept draws belong to no rank.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace shardfuzz::nn {

class Init {
 public:
  // shape_only: tensors on the meta device (sizes, no draws), for a shape-only run. kept_as: the
  // seed whose draws the cache keeps these as (default `seed`): a stream of its own inside one
  // model (a LoRA adapter's) is kept and dropped with the model's draws.
  explicit Init(uint64_t seed, bool shape_only = false, std::optional<uint64_t> kept_as = std::nullopt);
  at::Tensor normal(const std::vector<int64_t>& sizes, double std);
  at::Tensor zeros(const std::vector<int64_t>& sizes);

 private:
  at::Generator gen_;
  uint64_t kept_as_ = 0;
  bool shape_only_ = false;
};

// The process's recent draws: how many normal() calls it served without drawing, and drew.
struct DrawCacheCounts {
  int64_t served = 0;
  int64_t drawn = 0;
};
DrawCacheCounts draw_cache_counts();

}  // namespace shardfuzz::nn
