// What a structural shrink (over the catalogue of named edits, fuzz/shrink/edits.h) may not touch.
#pragma once

namespace shardfuzz::fuzz {

struct StructuralShrinkOptions {
  bool keep_world = false;  // never change world_size (the GPUs at hand are fixed)
};

}  // namespace shardfuzz::fuzz
