// The block draw: independent draws per field, so each shrinks on its own.
#include "fuzz/gen/block.h"

#include "fuzz/gen/choice.h"
#include "fuzz/gen/list.h"
#include "fuzz/gen/options.h"
#include "fuzz/gen/prefetch.h"

#include <rapidcheck/gen/Build.h>

namespace shardfuzz::fuzz::gen {

using detail::BlockDraw;

rc::Gen<BlockDraw> block(const detail::BlockWeights& w) {
  using Kind = harness::BlockSpec::Kind;
  using Mode = ac::CheckpointMode;
  std::vector<rc::Gen<bool>> wraps;
  std::vector<rc::Gen<harness::ShardSpec>> options;
  std::vector<rc::Gen<detail::PrefetchDraw>> lists;
  for (std::size_t s = 0; s < detail::kNumSubs; ++s) {
    wraps.push_back(flag(w.wrap[s].first, w.wrap[s].second));
    options.push_back(s == detail::kExperts ? experts_options() : dense_options());
    lists.push_back(prefetch_list());
  }
  return rc::gen::build<BlockDraw>(
      rc::gen::set(&BlockDraw::wrap, sequence(wraps)),
      rc::gen::set(&BlockDraw::ac, weighted_choice<Mode>({{w.ac_none, Mode::None},
                                                          {w.ac_non_reentrant, Mode::NonReentrant},
                                                          {w.ac_reentrant, Mode::Reentrant},
                                                          {w.ac_selective_ops, Mode::SelectiveOps}})),
      rc::gen::set(&BlockDraw::ac_wraps_hooks, flag(w.ac_inside_hooks, w.ac_wraps_hooks)),
      rc::gen::set(&BlockDraw::kind,
                   weighted_choice<Kind>({{w.mlp, Kind::Mlp}, {w.moe, Kind::Moe}, {w.routed_moe, Kind::RoutedMoe}})),
      rc::gen::set(&BlockDraw::gated, flag(w.ungated, w.gated)),
      rc::gen::set(&BlockDraw::frozen, flag(w.thawed, w.frozen)),
      rc::gen::set(&BlockDraw::attention, flag(w.linear_attn, w.attention)),
      rc::gen::set(&BlockDraw::norm, flag(w.no_norm, w.norm)),
      rc::gen::set(&BlockDraw::no_grad, flag(w.with_grad, w.no_grad)),
      rc::gen::set(&BlockDraw::lora, sequence(std::vector<rc::Gen<bool>>(detail::kLoraCandidates.size(),
                                                                         flag(w.no_lora, w.lora)))),
      rc::gen::set(&BlockDraw::options, sequence(options)),
      rc::gen::set(&BlockDraw::forward, sequence(lists)),
      rc::gen::set(&BlockDraw::backward, sequence(lists)));
}

}  // namespace shardfuzz::fuzz::gen
