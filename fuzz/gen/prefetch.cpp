// Prefetch style and list draws.
#include "fuzz/gen/prefetch.h"

#include "fuzz/gen/choice.h"
#include "fuzz/gen/list.h"

#include <rapidcheck/gen/Create.h>
#include <rapidcheck/gen/Transform.h>

namespace shardfuzz::fuzz::gen {

using detail::PrefetchDraw;
using detail::PrefetchStyle;
using detail::TargetDraw;

rc::Gen<PrefetchStyle> prefetch_style() {
  return weighted_choice<PrefetchStyle>(
      {{6, PrefetchStyle::None}, {2, PrefetchStyle::Torchtitan}, {2, PrefetchStyle::Random}});
}

rc::Gen<TargetDraw> prefetch_target() {
  using K = TargetDraw::Kind;
  return weighted_choice<TargetDraw>({
      {3, {K::Block, +1, detail::kBlock}},
      {3, {K::Block, -1, detail::kBlock}},
      {2, {K::Block, +1, detail::kExperts}},
      {2, {K::Block, -1, detail::kExperts}},
      {2, {K::Block, 0, detail::kExperts}},
      {1, {K::Block, 0, detail::kBlock}},
      {1, {K::Block, 0, detail::kAttn}},
      {1, {K::Out, 0, 0}},
      {1, {K::Self, 0, 0}},
  });
}

rc::Gen<PrefetchDraw> prefetch_list() {
  const std::vector<TargetDraw> self{TargetDraw{TargetDraw::Kind::Self, 0, 0}};
  return weighted_one_of<PrefetchDraw>({
      {2, rc::gen::just<PrefetchDraw>(std::nullopt)},
      {1, rc::gen::just<PrefetchDraw>(std::vector<TargetDraw>{})},
      {1, rc::gen::just<PrefetchDraw>(self)},
      {2, rc::gen::map(bounded_vector<TargetDraw>(1, 2, prefetch_target()),
                       [](std::vector<TargetDraw> targets) { return PrefetchDraw(std::move(targets)); })},
  });
}

}  // namespace shardfuzz::fuzz::gen
