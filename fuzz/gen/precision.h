// The model's dtype and FSDP2's MixedPrecisionPolicy: float32 3 : bfloat16 1; no policy 2 : a
// policy 1 with param_dtype bfloat16 4 : float32 1, reduce_dtype float32 3 : none 1 : bfloat16 1,
// and accelerate's upcast of trainable parameters 1 : 1. Each shrinks toward float32 and no policy.
#pragma once

#include "harness/scenario/scenario.h"

#include <rapidcheck/Gen.h>

#include <cstddef>
#include <optional>
#include <string>

namespace shardfuzz::fuzz::gen {

rc::Gen<std::string> model_dtype(std::size_t float32, std::size_t bfloat16);
rc::Gen<std::optional<harness::MixedPrecisionSpec>> mixed_precision(std::size_t without, std::size_t with);

}  // namespace shardfuzz::fuzz::gen
