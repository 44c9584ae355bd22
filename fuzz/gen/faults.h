// The fault plan's draws (`shardfuzz fuzz --faults`): 1-2 faults, each a kind (straggler 3,
// collective error 3, crash 2, exception 2, hang 1: a hang costs a deadline per run), a rank (made
// < world by repair), the rank's collective index 0-60 and, for a straggler, 1-50 ms; an exception
// names a block, a pass and a step (repair keeps them in the model). They shrink toward fewer
// faults, a collective error, rank 0, an earlier collective and a shorter delay.
#pragma once

#include "harness/scenario.h"

#include <rapidcheck/Gen.h>

#include <vector>

namespace shardfuzz::fuzz::gen {

rc::Gen<harness::FaultSpec> fault();
// Empty when `enabled` is false (no randomness used: fault-free campaigns draw what they drew).
rc::Gen<std::vector<harness::FaultSpec>> fault_plan(bool enabled);

}  // namespace shardfuzz::fuzz::gen
