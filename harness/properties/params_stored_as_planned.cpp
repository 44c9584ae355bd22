// Property: every parameter is stored (sharded) in the dtype the scenario plans for it — the
// model's dtype, or float32 master weights for parameters that require grad under mixed precision.
// An exact analytic check of the sharded bytes: a frozen base upcast with its adapters
// (huggingface/accelerate#3844) shows as float32 shards where bfloat16 was planned.
#include "harness/properties/property.h"

#include "harness/scenario/quoted.h"

#include <ATen/ATen.h>

namespace shardfuzz::harness {

Verdict check_params_stored_as_planned(const Scenario& sc, const RunRecord& run) {
  for (const RankRecord& r : run.ranks) {
    int64_t extra = 0;
    int count = 0;
    const ShardRecord* first = nullptr;
    for (const ShardRecord& s : r.shards) {
      const c10::ScalarType planned = sc.stored_dtype(s.requires_grad);
      if (!s.local.defined() || s.local.scalar_type() == planned) continue;
      const int64_t planned_bytes = s.padded_bytes / static_cast<int64_t>(s.local.element_size()) *
                                    static_cast<int64_t>(c10::elementSize(planned));
      extra += s.padded_bytes - planned_bytes;
      ++count;
      if (!first) first = &s;
    }
    if (first)
      return {"params_stored_as_planned", false, false,
              "rank " + std::to_string(r.rank) + ", group " + first->group + ": parameter " + first->fqn + " (" +
                  (first->requires_grad ? "trainable" : "frozen") + ") is stored as " +
                  dtype_name(first->local.scalar_type()) + ", planned " +
                  dtype_name(sc.stored_dtype(first->requires_grad)) + " (dtype " + quoted(sc.dtype) +
                  (sc.mixed_precision ? ", mixed precision" : "") + "); " + std::to_string(count) +
                  " parameter(s) on this rank hold " + std::to_string(extra) + " bytes more than planned"};
  }
  return {"params_stored_as_planned", true, false, "every parameter is stored in its planned dtype"};
}

}  // namespace shardfuzz::harness
