// A finding's stable identity across nights: the property it fails, the bug-zoo row blamed, and the
// structure of its minimal scenario (not its seed, name or widths), so that the same bug found again
// tomorrow from another seed is counted as the same finding.
#pragma once

#include "harness/scenario/scenario.h"

#include <cstdint>
#include <string>

namespace shardfuzz::fuzz::findings {

// The structure of a (shrunk) scenario, one line per part, deterministic and readable:
//   world 2, expert_shard_size 0, expert_parallel no
//   steps many, micro_batches 1, forwards_per_backward 1, eval_forward no
//   model: embed no, final_norm no, input_requires_grad yes, input_per_rank yes, loss mean, optimizer sgd,
//          dtype float32, mixed_precision none, device_memory unbounded, shape_only no
//   block 0: moe gated, ac full, ac_wraps_hooks no, frozen no, attention no, norm no, no_grad no, lora -
//   fully_shard "layers.0": mesh dp, reshard_after_forward auto, shard_dim 0, forward_prefetch absent, ...
//   faults: collective_error, nan
// Left out, because they do not change which code runs: name, seed, dims, the optimizer's
// hyper-parameters, the device-memory and routing-skew values, the profile (a column of its own),
// and where and when each fault fires (its kind stays). Counts that only repeat a phase (steps,
// micro_batches, forwards_per_backward) are "1" or "many".
std::string structural_shape(const harness::Scenario& minimal);

// FNV-1a 64 of `text`, as 16 lower-case hex digits.
std::string fnv1a64_hex(const std::string& text);

// "property|zoo|<fnv1a64 of shape>". `zoo_or_blamed`: the bug-zoo row or class the campaign blamed
// ("5", "S3", "unattributed", "torch-changed"); "" is written "unattributed". Throws
// std::invalid_argument naming the argument when `property` is empty or either name holds '|'.
std::string finding_signature(const std::string& property, const std::string& zoo_or_blamed,
                              const std::string& shape);

}  // namespace shardfuzz::fuzz::findings
