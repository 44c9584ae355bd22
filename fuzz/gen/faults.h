// The fault plan's draws (`shardfuzz fuzz --faults`): 1-2 faults, each a kind (straggler 3,
// collective error 3, crash 2, exception 2, oom 2, hang 1: a hang costs a deadline per run, nan 1,
// inf 1; abort only when asked for), a rank (made < world by repair), the rank's collective index
// 0-60 and, for a straggler, 1-50 ms; an exception, nan or inf names a block and a step (an
// exception also a pass; repair keeps them in the model); an oom an allocation 0-300 or a limit of
// 1-50 KiB. They shrink toward fewer faults, the first kind, rank 0, an earlier collective, step or
// allocation and a shorter delay.
#pragma once

#include "harness/scenario/scenario.h"

#include <rapidcheck/Gen.h>

#include <vector>

namespace shardfuzz::fuzz::gen {

// The kinds drawn when none are named: all but "abort".
const std::vector<std::string>& default_fault_kinds();
rc::Gen<harness::FaultSpec> fault(const std::vector<std::string>& kinds = {});
// Empty when `enabled` is false (no randomness used: fault-free campaigns draw what they drew).
rc::Gen<std::vector<harness::FaultSpec>> fault_plan(bool enabled, const std::vector<std::string>& kinds = {});

}  // namespace shardfuzz::fuzz::gen
