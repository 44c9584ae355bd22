// Explicit prefetch: the scenario-wide style (none, torchtitan's layout, or per-placement lists)
// and, for the per-placement style, each list: absent, empty, [self] or other modules. Targets are
// relative (next block, previous block's experts, the head, ...) and resolved at assembly;
// repair() drops those that name no wrapped module.
#pragma once

#include "fuzz/gen/detail/draws.h"

#include <rapidcheck/Gen.h>

namespace shardfuzz::fuzz::gen {

// none 6 : torchtitan 2 : per-placement lists 2. Shrinks toward none.
rc::Gen<detail::PrefetchStyle> prefetch_style();

// One list: absent 2 : empty 1 : [self] 1 : 1-2 targets 2. Shrinks toward absent.
rc::Gen<detail::PrefetchDraw> prefetch_list();

// One target: next block 3, previous block 3, next block's experts 2, previous block's experts 2,
// own experts 2, own block 1, own attn 1, the head 1, self 1 (shrinks toward next block).
rc::Gen<detail::TargetDraw> prefetch_target();

}  // namespace shardfuzz::fuzz::gen
