// Dtype and mixed-precision draws.
#include "fuzz/gen/precision.h"

#include "fuzz/gen/choice.h"

#include <rapidcheck/gen/Build.h>
#include <rapidcheck/gen/Create.h>
#include <rapidcheck/gen/Transform.h>

namespace shardfuzz::fuzz::gen {

rc::Gen<std::string> model_dtype(std::size_t float32, std::size_t bfloat16) {
  return weighted_choice<std::string>({{float32, "float32"}, {bfloat16, "bfloat16"}});
}

rc::Gen<std::optional<harness::MixedPrecisionSpec>> mixed_precision(std::size_t without, std::size_t with) {
  using Spec = harness::MixedPrecisionSpec;
  // "" stands for an absent reduce_dtype (upstream's None: reduce in param_dtype).
  const rc::Gen<Spec> spec = rc::gen::map(
      rc::gen::tuple(weighted_choice<std::string>({{4, "bfloat16"}, {1, "float32"}}),
                     weighted_choice<std::string>({{3, "float32"}, {1, ""}, {1, "bfloat16"}}), flag(1, 1)),
      [](const std::tuple<std::string, std::string, bool>& t) {
        Spec s;
        s.param_dtype = std::get<0>(t);
        s.reduce_dtype = std::get<1>(t).empty() ? std::nullopt : std::optional<std::string>(std::get<1>(t));
        s.upcast_trainable = std::get<2>(t);
        return s;
      });
  return weighted_one_of<std::optional<Spec>>(
      {{without, rc::gen::just(std::optional<Spec>())},
       {with, rc::gen::map(spec, [](const Spec& s) { return std::optional<Spec>(s); })}});
}

}  // namespace shardfuzz::fuzz::gen
