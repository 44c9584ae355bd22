// The reference's ranks-as-one-batch path (train::run_reference, harness::reference_batches_ranks):
// on the models it is chosen for, its losses and final parameters are the rank-by-rank path's up to
// float32 rounding, through micro-batches, several forwards per backward, embeddings, frozen and
// no_grad blocks, LoRA, both losses and both optimizers; and it is not chosen where rows mix
// (attention), where a row's last bit can route a token (top-k), or below float32.
#include "harness/model/model_builder.h"
#include "harness/reference/reference.h"
#include "harness/scenario/standard_scenarios.h"
#include "runtime/train/reference.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace shardfuzz::harness {
namespace {

struct Trained {
  train::ReferenceRun run;
  std::map<std::string, at::Tensor> parameters;
};

Trained train_reference(const Scenario& sc, bool as_one_batch) {
  BuildOptions as_reference;
  as_reference.reference = true;
  auto model = build_model(sc, as_reference);
  auto input = [&](int rank, int step, int micro, int forward) { return input_of(sc, rank, step, micro, forward); };
  Trained t;
  t.run = train::run_reference(*model, sc.world_size, sc.steps, step_plan(sc), input, loss_fn(sc), sc.optimizer,
                               as_one_batch);
  for (auto& [fqn, p] : model->named_parameters()) t.parameters[fqn] = p->detach().clone();
  return t;
}

void expect_same_training(const Scenario& sc) {
  ASSERT_TRUE(reference_batches_ranks(sc)) << sc.name;
  const Trained by_rank = train_reference(sc, false), batched = train_reference(sc, true);
  ASSERT_EQ(by_rank.run.losses.size(), batched.run.losses.size());
  for (std::size_t s = 0; s < by_rank.run.losses.size(); ++s)
    for (std::size_t r = 0; r < by_rank.run.losses[s].size(); ++r) {
      const double want = by_rank.run.losses[s][r];
      EXPECT_NEAR(batched.run.losses[s][r], want, 1e-5 * std::max(1.0, std::abs(want)))
          << sc.name << ": step " << s + 1 << " rank " << r;
    }
  bool moved = false;
  for (const auto& [fqn, want] : by_rank.parameters) {
    const at::Tensor got = batched.parameters.at(fqn);
    const double scale = std::max(1.0, want.abs().max().item<double>());
    EXPECT_LE((got - want).abs().max().item<double>(), 1e-5 * scale) << sc.name << ": " << fqn;
  }
  // The comparison means something only if training moved the parameters.
  BuildOptions as_reference;
  as_reference.reference = true;
  const auto initial = build_model(sc, as_reference);
  for (auto& [fqn, p] : initial->named_parameters())
    moved = moved || !at::equal(p->detach(), by_rank.parameters.at(fqn));
  EXPECT_TRUE(moved) << sc.name << ": no parameter moved";
}

TEST(ReferenceBatching, TheStandardSmallScenarioTrainsAsRankByRank) {
  Scenario sc = standard_small_scenario();
  sc.steps = 3;
  expect_same_training(sc);
}

TEST(ReferenceBatching, MicroBatchesForwardsPerBackwardEmbeddingsFrozenNoGradAndLoraTrainAsRankByRank) {
  Scenario sc = standard_small_scenario();
  sc.name = "embed-micro-forwards";
  sc.embed = true;
  sc.final_norm = true;
  sc.micro_batches = 2;
  sc.forwards_per_backward = 2;
  sc.loss = "sum";
  sc.optimizer.kind = train::OptimizerConfig::Kind::AdamW;
  sc.optimizer.lr = 1e-3;
  sc.blocks[1].frozen = true;
  sc.blocks[2].no_grad = true;
  sc.blocks[3].kind = BlockSpec::Kind::Mlp;
  sc.blocks[3].lora = {"mlp.fc1"};
  sc.world_size = 3;
  expect_same_training(sc);
  sc.name = "one-input";
  sc.input_per_rank = false;
  sc.embed = false;
  expect_same_training(sc);
}

TEST(ReferenceBatching, RowsThatMixRoutingAndLowPrecisionKeepTheRankByRankPath) {
  const Scenario base = standard_small_scenario();
  EXPECT_TRUE(reference_batches_ranks(base));
  Scenario attends = base;
  attends.blocks[2].attention = true;
  EXPECT_FALSE(reference_batches_ranks(attends)) << "attention mixes the rows of a batch";
  Scenario routed = base;
  routed.blocks[0].kind = BlockSpec::Kind::RoutedMoe;
  EXPECT_FALSE(reference_batches_ranks(routed)) << "top-k routing hangs on a row's last bit";
  Scenario bf16 = base;
  bf16.dtype = "bfloat16";
  EXPECT_FALSE(reference_batches_ranks(bf16));
  Scenario mixed = base;
  mixed.mixed_precision = MixedPrecisionSpec{};
  EXPECT_FALSE(reference_batches_ranks(mixed));
}

}  // namespace
}  // namespace shardfuzz::harness
