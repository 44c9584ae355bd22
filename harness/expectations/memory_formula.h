// Upstream's expected-memory formula (test_fully_shard_memory.py, test_fully_shard_training_memory):
// an upper bound in fp32 MB (numel x 4 / 1e6) made of multiples of the model's numels plus a flat
// buffer for fragmentation and activations (16 MB), here in bytes over the native model's numels.
#pragma once

#include "harness/run/run_record.h"

#include <cstdint>
#include <string>

namespace shardfuzz::harness::expectations {

// The coefficients of one phase's bound. Upstream: forward with reshard_after_forward=True is
// 3 x block + non_block + sharded + 16 MB; backward 4 x block (3 before 65a5602af) + non_block +
// 2 x sharded + 16 MB; with False, forward sharded + unsharded + block + 16 MB and backward sharded
// + unsharded + 1.5 x block + 16 MB.
struct MemoryFormula {
  double block = 0;      // x the numel of one block (`block_module`'s parameters)
  double non_block = 0;  // x the numel outside the blocks (embeddings, final norm, head)
  double sharded = 0;    // x the model's numel / world size, rounded up (upstream: (numel + 1) // 2)
  double unsharded = 0;  // x the model's numel
  double buffer_mb = 16;
  std::string block_module = "layers.0";
};

// The model's numels, from the run's un-padded local shards of every rank.
struct ModelNumels {
  int64_t unsharded = 0;
  int64_t sharded = 0;
  int64_t block = 0;
  int64_t non_block = 0;
};

// Throws std::invalid_argument when the run recorded no shards or none under `block_module`.
ModelNumels model_numels(const RunRecord& run, const std::string& block_module);
// The bound in bytes: 4 bytes per element (upstream's fp32 numbers), the buffer at 1e6 bytes a MB.
int64_t formula_bytes(const MemoryFormula& formula, const ModelNumels& numels);

}  // namespace shardfuzz::harness::expectations
