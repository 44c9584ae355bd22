// Model dims and the run length: small enough that a case runs in well under a second on CPU.
#pragma once

#include "harness/scenario/scenario.h"

#include <rapidcheck/Gen.h>

namespace shardfuzz::fuzz::gen {

// The ladders of fuzz/gen/ladders.h: dim {4, 6, 8, 12, 16}, hidden {4, 8, 12}, experts {1, 2, 3, 4},
// tokens {2, 3, 4, 8}, ...; each shrinks toward its smallest value.
rc::Gen<harness::Dims> dims();

// 1..max_steps (1:1, 2:2, 3:1, then 1 each), shrinks toward 1.
rc::Gen<int> steps(int max_steps);

}  // namespace shardfuzz::fuzz::gen
