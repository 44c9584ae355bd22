// Edits of the precision: no mixed-precision policy (then, keeping it, no upcast of trainable
// parameters), a float32 model.
#include "fuzz/shrink/edits/helpers.h"

namespace shardfuzz::fuzz::shrinking::edits {

Candidates no_mixed_precision(const Scenario& sc) {
  if (!sc.mixed_precision) return {};
  Candidates out = {with(sc, [](Scenario& s) { s.mixed_precision.reset(); })};
  if (sc.mixed_precision->upcast_trainable)
    out.push_back(with(sc, [](Scenario& s) { s.mixed_precision->upcast_trainable = false; }));
  return out;
}

Candidates float32_model(const Scenario& sc) {
  Candidates out;
  push_simplest(out, sc, &Scenario::dtype, std::string("float32"));
  return out;
}

}  // namespace shardfuzz::fuzz::shrinking::edits
