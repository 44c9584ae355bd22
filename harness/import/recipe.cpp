// Checking a Recipe.
#include "harness/import/recipe.h"

#include <stdexcept>

namespace shardfuzz::harness::import {
namespace {

[[noreturn]] void bad(const std::string& field, const std::string& what) { throw std::invalid_argument(field + ": " + what); }

bool one_of(const std::string& v, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (v == n) return true;
  return false;
}

}  // namespace

void Recipe::validate(int64_t experts) const {
  if (world < 1 || world > 1 << 20) bad("world", std::to_string(world) + " outside [1, 1048576]");
  if (dp_replicate < 1 || world % dp_replicate != 0)
    bad("data_parallel_replicate_degree", std::to_string(dp_replicate) + " does not divide the world (" + std::to_string(world) + ")");
  if (dp_shard != -1 && (dp_shard < 1 || dp_shard * dp_replicate != world))
    bad("data_parallel_shard_degree", std::to_string(dp_shard) + " x data_parallel_replicate_degree " + std::to_string(dp_replicate) +
                                          " is not the world (" + std::to_string(world) + ")");
  if (ep < 1 || shard_degree() % ep != 0)
    bad("expert_parallel_degree", std::to_string(ep) + " does not divide data_parallel_shard_degree " + std::to_string(shard_degree()));
  if (ep > 1 && experts == 0) bad("expert_parallel_degree", std::to_string(ep) + " on a model without routed experts");
  if (experts > 0 && experts % ep != 0)
    bad("expert_parallel_degree", std::to_string(ep) + " does not divide the " + std::to_string(experts) + " experts");
  if (!one_of(reshard_after_forward, {"default", "always", "never"}))
    bad("fsdp_reshard_after_forward", "\"" + reshard_after_forward + "\" is not default, always or never");
  if (!one_of(ac, {"none", "full", "selective"})) bad("activation_checkpoint.mode", "\"" + ac + "\" is not none, full or selective");
  for (const auto* d : {&param_dtype, &reduce_dtype, &storage_dtype})
    if (!one_of(*d, {"bfloat16", "float16", "float32"}))
      bad(d == &param_dtype ? "mixed_precision_param" : d == &reduce_dtype ? "mixed_precision_reduce" : "storage_dtype",
          "\"" + *d + "\" is not bfloat16, float16 or float32");
  if (local_batch_size < 1 || local_batch_size > 1 << 20) bad("local_batch_size", std::to_string(local_batch_size) + " outside [1, 1048576]");
  if (seq_len < 1 || seq_len > 1 << 24) bad("seq_len", std::to_string(seq_len) + " outside [1, 16777216]");
}

}  // namespace shardfuzz::harness::import
