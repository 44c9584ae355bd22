// Property 4: parity with the unsharded single-rank reference (same seed, every rank's batch, loss
// averaged over ranks, the same optimizer on full tensors).
#include "harness/properties/property.h"

#include "harness/reference/reference.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace shardfuzz::harness {

double Tolerances::parity_relative(const Scenario& sc, const std::string& device) {
  const bool bf16 = sc.dtype == "bfloat16" ||
                    (sc.mixed_precision && (sc.mixed_precision->param_dtype == "bfloat16" ||
                                            sc.mixed_precision->reduce_dtype.value_or("") == "bfloat16"));
  if (bf16) return kParityRelativeBf16;
  return device == "cpu" ? kParityRelative : kParityRelativeOnDevice;
}

namespace {

// How many steps' losses parity compares (the shards only when it is every step). In bfloat16 the
// two sides can round differently in step 1 and the difference grows: top-k routing (an ulp can
// route a token to another expert from step 2 on, a discrete jump), and a module used by several
// forwards of one backward (FSDP reduces each use's gradient on its own, in reduce_dtype; the
// reference sums the uses in param_dtype inside autograd — found by the README's strict campaign:
// 0.0226 over a 0.02 tolerance after step 2 through attention): those compare the first step
// (identical forwards). And a bfloat16 loss that grows fast carries the roundings with it (found
// by a 5-minute strict campaign: a single root group at world 4 whose loss went 1.7 -> 16 -> 59
// ended 2.3% off the reference, while the same run in float32 is 16% away from either and matches
// its own reference to 1e-4): steps are compared while the reference's |loss| stays within
// kParityGrowthLowPrecision x its first step's (`first`).
std::size_t steps_compared(const Scenario& sc, const Reference& ref, double first) {
  bool routed = false;
  for (const BlockSpec& b : sc.blocks) routed = routed || b.kind == BlockSpec::Kind::RoutedMoe;
  const bool low_precision = sc.compute_dtype() != c10::ScalarType::Float;
  std::size_t compared = (routed || sc.forwards_per_backward > 1) && low_precision ? 1 : ref.losses.size();
  if (low_precision)
    for (std::size_t s = 1; s < compared; ++s)
      for (double l : ref.losses[s])
        if (std::abs(l) > Tolerances::kParityGrowthLowPrecision * std::max(1.0, first)) compared = std::min(compared, s);
  return compared;
}

// The reference's slice that a rank's shard holds.
at::Tensor expected_shard(const at::Tensor& full, const ShardRecord& shard) {
  const at::Tensor whole = shard.full_rows < 0 ? full : full.narrow(0, shard.full_begin, shard.full_rows);
  const int64_t n = whole.size(shard.shard_dim);
  const int64_t chunk = (n + shard.shard_size - 1) / shard.shard_size;
  const int64_t begin = std::min(chunk * shard.shard_rank, n);
  return whole.narrow(shard.shard_dim, begin, std::min(chunk, n - begin));
}

// How far rounding alone moves this scenario's training: its rounding twin (the reference computed
// in a wider type: float32 for a low-precision scenario, float64 for a float32 one) against the
// reference. Trained only when a comparison fails (the common case never pays). Two computations of
// one scenario that differ only in reduction order or in their formulas can each sit that far from
// the wider one on either side, so a difference within twice the distance is rounding (found on
// the GPU host's torch 2.11 kernels: a world-5 bfloat16 run ended 0.022 from its reference at step
// 2, both sides about 0.012 from float32). The distance is taken over the step's every rank and the
// parameter's every element: rounding moves the weights all ranks share, and which rank's loss or
// which element shows it most is chance (a world-7 bfloat16 run: twin distances at step 3 from
// 0.00004 to 0.101 across ranks, the run's largest miss 0.027 on a rank whose own was 0.0009). And a
// float32 run whose loss grows fast amplifies its formulas' last bits (a world-1 run whose loss went
// 6.7 -> -10 -> -384 ended an attention bias 1.5e-4 of its scale from the reference, with losses
// within 3e-6).
class RoundingSlack {
 public:
  RoundingSlack(const Scenario& sc, const Reference& ref) : sc_(sc), ref_(ref) {}
  // The step's twin distance relative to each rank's |loss| (at least 1), the largest over ranks.
  double loss(std::size_t step) {
    const std::vector<double>& a = twin().losses.at(step);
    const std::vector<double>& b = ref_.losses.at(step);
    double most = 0;
    for (std::size_t r = 0; r < a.size() && r < b.size(); ++r)
      most = std::max(most, std::abs(a[r] - b[r]) / std::max(1.0, std::abs(b[r])));
    return most;
  }
  // The parameter's twin distance relative to its scale (its largest |element|, at least 1).
  double parameter(const std::string& fqn) {
    const auto a = twin().parameters.find(fqn), b = ref_.parameters.find(fqn);
    if (a == twin().parameters.end() || b == ref_.parameters.end()) return 0;
    const at::Tensor x = a->second.to(at::kDouble), y = b->second.to(at::kDouble);
    if (!x.numel() || x.sizes() != y.sizes()) return 0;
    return (x - y).abs().max().item<double>() / std::max(1.0, y.abs().max().item<double>());
  }
  std::string what() const {
    return sc_.compute_dtype() == c10::ScalarType::Float ? "float32 rounding" : "low-precision rounding";
  }

 private:
  const Reference& twin() {
    if (!twin_) twin_ = rounding_twin_of(sc_);
    return *twin_;
  }
  const Scenario& sc_;
  const Reference& ref_;
  std::shared_ptr<const Reference> twin_;
};

// The comparison proper: losses step by step, then (when every step was compared) the shards.
class ParityJudge {
 public:
  ParityJudge(const Scenario& sc, const RunRecord& run, const Reference& ref, double first)
      : sc_(sc), run_(run), ref_(ref), rtol_(Tolerances::parity_relative(sc, run.device)), slack_(sc, ref) {
    compared_ = steps_compared(sc, ref, first);
    growth_cut_ = compared_ < ref.losses.size();
  }

  Verdict judge() {
    if (std::optional<Verdict> failed = compare_losses()) return *failed;
    if (compared_ == ref_.losses.size())
      if (std::optional<Verdict> failed = compare_shards()) return *failed;
    return passed();
  }

 private:
  static Verdict fail(std::string message) { return {"parity_with_reference", false, false, std::move(message)}; }
  static Verdict pass(std::string message) { return {"parity_with_reference", true, false, std::move(message)}; }

  // Where rounding alone (the twin's distance) passes the tolerance, the comparison says nothing:
  // two correct computations differ by more than a bug must show. From that step on nothing is
  // judged, and the verdict says so (a world-7 bfloat16 run with attention: its twin 0.155 from
  // the reference in a weight of scale 1.2, after 2 steps).
  std::optional<Verdict> compare_losses() {
    for (const RankRecord& r : run_.ranks)
      for (std::size_t s = 0; s < r.losses.size() && s < compared_; ++s) {
        const double want = ref_.losses[s][static_cast<std::size_t>(r.rank)];
        const double scale = std::max(1.0, std::abs(want));
        const double allowed = rtol_ * scale;
        const double diff = std::abs(r.losses[s] - want);
        if (diff <= allowed) continue;
        const double twin = slack_.loss(s);
        if (twin > rtol_) {
          rounding_cut_ = compared_ = s;
          cut_distance_ = twin;
          break;
        }
        if (diff > allowed + 2 * twin * scale)
          return fail("rank " + std::to_string(r.rank) + " step " + std::to_string(s + 1) + ": loss " +
                      std::to_string(r.losses[s]) + " vs reference " + std::to_string(want) + " (allowed " +
                      std::to_string(allowed) + " + " + std::to_string(2 * twin * scale) + " for " + slack_.what() +
                      ")");
      }
    return std::nullopt;
  }

  // A parameter whose own twin distance passes the tolerance is not judged (listed in the verdict).
  std::optional<Verdict> compare_shards() {
    for (const RankRecord& r : run_.ranks)
      for (const ShardRecord& shard : r.shards) {
        auto it = ref_.parameters.find(shard.fqn);
        if (it == ref_.parameters.end())
          return fail("rank " + std::to_string(r.rank) + ": parameter " + shard.fqn + " of group " + shard.group +
                      " is not in the reference");
        const at::Tensor expected = expected_shard(it->second, shard);
        // Relative to the tensor's scale: elements near zero carry the rounding of their neighbours.
        const bool same_shape = expected.sizes() == shard.local.sizes();
        const double diff = same_shape && expected.numel() ? (shard.local - expected).abs().max().item<double>() : 0.0;
        const double scale = expected.numel() ? std::max(1.0, expected.abs().max().item<double>()) : 1.0;
        const double allowed = rtol_ * scale;
        if (same_shape && diff <= allowed) continue;
        const double twin = slack_.parameter(shard.fqn);
        if (same_shape && twin > rtol_) {
          unjudged_.insert(shard.fqn);
          continue;
        }
        if (!same_shape || !(diff <= allowed + 2 * twin * scale))
          return fail("rank " + std::to_string(r.rank) + ", group " + shard.group + ", parameter " + shard.fqn +
                      ": local shard differs from the reference after " + std::to_string(sc_.steps) +
                      " step(s) (max abs diff " + std::to_string(diff) + ", allowed " + std::to_string(allowed) +
                      " = " + std::to_string(rtol_) + " x the tensor's scale, + " +
                      std::to_string(2 * twin * scale) + " for " + slack_.what() + ")");
      }
    return std::nullopt;
  }

  Verdict passed() {
    if (rounding_cut_)
      return pass("the first " + std::to_string(compared_) + " step(s)' losses match the reference; from step " +
                  std::to_string(compared_ + 1) + " on, " + slack_.what() + " alone moves a loss " +
                  std::to_string(cut_distance_) + " of its size (the rounding twin against the reference), past the " +
                  "tolerance " + std::to_string(rtol_) + ": later steps and shards not judged");
    if (growth_cut_)
      return pass("the first " + std::to_string(compared_) + " step(s)' losses match the reference (bfloat16 with "
                  "top-k routing, several forwards per backward or a fast-growing loss: later steps and shards not "
                  "compared)");
    if (!unjudged_.empty()) {
      std::string names;
      for (const std::string& u : unjudged_) names += (names.empty() ? "" : ", ") + u;
      return pass("losses and shards match the reference, but for " + names + ": " + slack_.what() +
                  " alone moves them past the tolerance (their rounding twin against the reference), so they are "
                  "not judged");
    }
    return pass("losses and shards match the reference");
  }

  const Scenario& sc_;
  const RunRecord& run_;
  const Reference& ref_;
  const double rtol_;
  RoundingSlack slack_;
  std::size_t compared_ = 0;
  bool growth_cut_ = false;
  std::optional<std::size_t> rounding_cut_;
  double cut_distance_ = 0;
  std::set<std::string> unjudged_;
};

}  // namespace

Verdict check_parity_with_reference(const Scenario& sc, const RunRecord& run) {
  if (!run.observed.values)
    return {"parity_with_reference", true, true, "a shape-only run holds sizes and bytes, no values to compare"};
  if (!run.observed.shard_values)
    return {"parity_with_reference", true, true,
            "the " + run.backend + " backend draws its own weights and inputs: nothing to compare with the reference"};
  for (const FiredFault& f : run.fired_faults)
    if (sc.faults.at(static_cast<std::size_t>(f.fault)).is_nonfinite())
      return {"parity_with_reference", true, true,
              "a planned " + f.kind + " gradient changed training on rank " + std::to_string(f.rank) +
                  " (nonfinite_reported judges it)"};
  if (!run.reference)
    return {"parity_with_reference", true, true, "the run carries no reference (RunOptions::reference is off)"};
  const Reference& ref = *run.reference;
  // A run whose loss explodes (the mean-output loss is unbounded below, and a large lr on a small
  // model walks off) amplifies float rounding without bound: no tolerance separates a bug from
  // reduction order there. Such a run is skipped, saying so; the memory properties still apply.
  double first = 0, largest = 0;
  for (std::size_t s = 0; s < ref.losses.size(); ++s)
    for (double l : ref.losses[s]) {
      if (!std::isfinite(l)) largest = INFINITY;
      if (s == 0) first = std::max(first, std::abs(l));
      largest = std::max(largest, std::abs(l));
    }
  if (largest > Tolerances::kParityDivergenceFactor * std::max(1.0, first))
    return {"parity_with_reference", true, true,
            "skipped: the reference diverged (largest |loss| " + std::to_string(largest) + " vs " +
                std::to_string(first) + " at step 1, over " + std::to_string(Tolerances::kParityDivergenceFactor) +
                "x): rounding is amplified without bound"};
  return ParityJudge(sc, run, ref, first).judge();
}

}  // namespace shardfuzz::harness
