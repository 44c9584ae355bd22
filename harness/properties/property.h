// Properties: named checks over one run, each failing with a message that says what, where (rank,
// step, layer, group) and how much. The registry runs them in a fixed order; the first failure's
// name is the identity shrinking preserves.
#pragma once

#include "harness/run/run_record.h"
#include "harness/scenario/scenario.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace shardfuzz::harness {

// Each FSDP group's whole all-gather output on this rank (padded, in the param dtype), by group.
inline std::map<std::string, int64_t> all_gather_bytes_by_group(const RankRecord& r) {
  std::map<std::string, int64_t> by_group;
  for (const ShardRecord& s : r.shards) by_group[s.group] += s.unsharded_bytes;
  return by_group;
}

struct Verdict {
  std::string property;
  bool ok = true;
  bool skipped = false;  // not applicable to this run (reason in message)
  std::string message;
};

using PropertyFn = std::function<Verdict(const Scenario&, const RunRecord&)>;

struct Property {
  std::string name;
  std::string summary;  // one line for --help and reports
  PropertyFn check;
};

// In check order: liveness first (nothing else is meaningful after a failed run).
const std::vector<Property>& all_properties();
std::vector<Verdict> check_properties(const Scenario& scenario, const RunRecord& run);
// The properties in check order up to and including `up_to` (every one when it names none of
// them): what a shrink step needs, since the first failing property is the failure's identity and
// a later property cannot change whether `up_to` is it.
std::vector<Verdict> check_properties(const Scenario& scenario, const RunRecord& run, const std::string& up_to);
// Whether judging up to `up_to` (check_properties above) needs the run's unsharded reference, i.e.
// parity_with_reference comes no later: a shrink step that does not is spared the reference's
// training (a third of a world-4 case's CPU).
bool needs_reference(const std::string& up_to);
// The first failed verdict, or nullptr. It points into `verdicts`, so a temporary list is refused
// (the pointer would dangle); any_failure answers only whether one failed.
const Verdict* first_failure(const std::vector<Verdict>& verdicts);
const Verdict* first_failure(std::vector<Verdict>&&) = delete;
inline bool any_failure(const std::vector<Verdict>& verdicts) { return first_failure(verdicts) != nullptr; }

// The individual properties.
Verdict check_liveness(const Scenario&, const RunRecord&);
Verdict check_faults_detected(const Scenario&, const RunRecord&);
// Not a check of a RunRecord: the verdict an isolated run (fuzz/campaign/case_runner.h) gives a case whose
// process died, hung past its wall-clock limit or passed its memory limit. Reproducers may expect it.
inline constexpr const char* kProcessSurvives = "process_survives";
Verdict check_recovers_after_fault(const Scenario&, const RunRecord&);
Verdict check_nonfinite_reported(const Scenario&, const RunRecord&);
Verdict check_per_layer_return_to_baseline(const Scenario&, const RunRecord&);
Verdict check_reshard_after_forward_honoured(const Scenario&, const RunRecord&);
Verdict check_prefetch_schedule_honoured(const Scenario&, const RunRecord&);
Verdict check_checkpoint_policy_honoured(const Scenario&, const RunRecord&);
Verdict check_flat_end_of_step_memory(const Scenario&, const RunRecord&);
Verdict check_teardown_to_baseline(const Scenario&, const RunRecord&);
Verdict check_buffers_live_as_fsdp2_holds(const Scenario&, const RunRecord&);
Verdict check_every_byte_explained(const Scenario&, const RunRecord&);
Verdict check_params_stored_as_planned(const Scenario&, const RunRecord&);
Verdict check_parity_with_reference(const Scenario&, const RunRecord&);
Verdict check_peak_within_bound(const Scenario&, const RunRecord&);
Verdict check_fits_device_memory(const Scenario&, const RunRecord&);

// Tolerances, stated once and printed in messages.
struct Tolerances {
  static constexpr int64_t kLayerGrowthBytes = 4096;   // + 2% of the ledger change
  static constexpr double kLayerGrowthFraction = 0.02;
  static constexpr int64_t kStepDriftBytes = 1024;
  // Relative to each tensor's scale. The runtime's parity tests hold 1e-5 on their models; over
  // generated ones (world up to 8, four blocks, float32) reduction order alone reaches ~1.2e-5.
  static constexpr double kParityRelative = 1e-4;
  // When anything is bfloat16 (8 mantissa bits: one rounding is 2^-9 = 2e-3 relative): the two
  // sides compute the same bfloat16 products and differ only in reduction order, and a few
  // roundings that land on the other side over a few steps.
  static constexpr double kParityRelativeBf16 = 2e-2;
  // A float32 run on a GPU against the CPU reference: cuBLAS blocks and accumulates differently
  // from the CPU's BLAS (measured on the H200: 2e-4 after two steps of a generated model).
  static constexpr double kParityRelativeOnDevice = 1e-3;
  static double parity_relative(const Scenario& sc, const std::string& device = "cpu");
  // Parity is skipped when the reference's |loss| grows past this factor of its first step's.
  static constexpr double kParityDivergenceFactor = 100.0;
  // In bfloat16, later steps are compared only while the reference's |loss| stays within this
  // factor of its first step's (the roundings grow with the loss; parity_with_reference.cpp).
  static constexpr double kParityGrowthLowPrecision = 4.0;
  static constexpr int64_t kPeakBufferBytes = 256 * 1024;
  // A peer learns of a planned fault within the collective deadline plus this.
  static constexpr double kDetectionSlackSeconds = 1.0;
};

}  // namespace shardfuzz::harness
