// Edits of the model's features: a plainer model (no embedding, no final norm, no expert
// parallelism) and plainer blocks (AC, LoRA, attention, norms, no_grad, MoE kinds, frozen, gated).
#include "fuzz/shrink/edits/helpers.h"

namespace shardfuzz::fuzz::shrinking::edits {

namespace {

using harness::BlockSpec;
using Mode = ac::CheckpointMode;
using Kind = BlockSpec::Kind;

// One candidate per block with `flag` set, the flag cleared.
Candidates clear_flag(const Scenario& sc, bool BlockSpec::*flag) {
  return each_block(sc, [&](const BlockSpec& b) { return b.*flag; }, [&](BlockSpec& b) { b.*flag = false; });
}

// One candidate per block whose AC mode is `from`, set to `to`.
Candidates ac_mode(const Scenario& sc, Mode from, Mode to) {
  return each_block(sc, [&](const BlockSpec& b) { return b.ac == from; }, [&](BlockSpec& b) { b.ac = to; });
}

}  // namespace

// A shape-only scenario run with data, once its sizes fit one: the reproducer then holds values,
// so parity judges it and `export --torch` gives a script that runs as it is.
Candidates with_data(const Scenario& sc) {
  if (!sc.shape_only) return {};
  return {with(sc, [](Scenario& s) { s.shape_only.reset(); })};
}

Candidates plainer_model(const Scenario& sc) {
  Candidates out;
  push_simplest(out, sc, &Scenario::embed, false);
  push_simplest(out, sc, &Scenario::final_norm, false);
  push_simplest(out, sc, &Scenario::expert_parallel, false);
  return out;
}

Candidates ac_off(const Scenario& sc) {
  return each_block(sc, [](const BlockSpec& b) { return b.ac != Mode::None; }, [](BlockSpec& b) { b.ac = Mode::None; });
}

Candidates reentrant_to_non_reentrant(const Scenario& sc) { return ac_mode(sc, Mode::Reentrant, Mode::NonReentrant); }

// Block by block, each adapter in turn.
Candidates drop_a_lora_adapter(const Scenario& sc) {
  Candidates out;
  for (std::size_t i = 0; i < sc.blocks.size(); ++i)
    for (std::size_t k = 0; k < sc.blocks[i].lora.size(); ++k)
      out.push_back(with(sc, [&](Scenario& s) { s.blocks[i].lora.erase(s.blocks[i].lora.begin() + static_cast<long>(k)); }));
  return out;
}

Candidates ac_inside_hooks(const Scenario& sc) { return clear_flag(sc, &BlockSpec::ac_wraps_hooks); }
Candidates no_attention(const Scenario& sc) { return clear_flag(sc, &BlockSpec::attention); }
Candidates no_norms(const Scenario& sc) { return clear_flag(sc, &BlockSpec::norm); }
Candidates grad_on(const Scenario& sc) { return clear_flag(sc, &BlockSpec::no_grad); }
Candidates unfreeze(const Scenario& sc) { return clear_flag(sc, &BlockSpec::frozen); }

Candidates selective_to_non_reentrant(const Scenario& sc) {
  return ac_mode(sc, Mode::SelectiveOps, Mode::NonReentrant);
}

Candidates routed_to_dense_moe(const Scenario& sc) {
  return each_block(sc, [](const BlockSpec& b) { return b.kind == Kind::RoutedMoe; }, [](BlockSpec& b) { b.kind = Kind::Moe; });
}

Candidates ungate(const Scenario& sc) {
  return each_block(sc, [](const BlockSpec& b) { return b.kind == Kind::Moe && b.gated; }, [](BlockSpec& b) { b.gated = false; });
}

Candidates moe_to_mlp(const Scenario& sc) {
  return each_block(sc, [](const BlockSpec& b) { return b.kind == Kind::Moe; }, [](BlockSpec& b) { b.kind = Kind::Mlp; });
}

}  // namespace shardfuzz::fuzz::shrinking::edits
