// Recipe: how an imported model is trained — the parallelism and memory settings a torchtitan
// job TOML holds (torchtitan_job.h reads one; the import command's flags set or override them).
#pragma once

#include <cstdint>
#include <string>

namespace shardfuzz::harness::import {

struct Recipe {
  int world = 1;                 // ranks in all
  int dp_replicate = 1;          // HSDP replicas (data_parallel_replicate_degree)
  int dp_shard = -1;             // FSDP shard degree (data_parallel_shard_degree; -1: world / dp_replicate)
  int ep = 1;                    // expert parallelism (expert_parallel_degree), borrowed from dp_shard
  std::string reshard_after_forward = "default";  // torchtitan's policy: default, always, never
  std::string ac = "full";       // activation checkpointing: none, full, selective
  std::string selective_ac_option = "op";  // selective: "op", or every N-th layer as "N"
  std::string param_dtype = "bfloat16";    // mixed precision: the all-gathered parameters' dtype
  std::string reduce_dtype = "float32";    // and the gradients' reduce-scatter dtype
  bool mixed_precision = true;   // false: parameters stay in the checkpoint's dtype everywhere
  std::string storage_dtype = "float32";   // with mixed precision: what the sharded parameters are held in
  int64_t local_batch_size = 1;  // sequences per rank per step
  int64_t seq_len = 4096;

  // Throws std::invalid_argument naming the field ("expert_parallel_degree: 3 does not divide
  // data_parallel_shard_degree 16"). `experts`: the MoE's routed experts (0: a dense model).
  void validate(int64_t experts) const;
  int shard_degree() const { return dp_shard > 0 ? dp_shard : world / dp_replicate; }
  // The experts' FSDP shard degree: dp_shard / ep (torchtitan's dp_shard_mod_ep).
  int experts_shard_degree() const { return shard_degree() / ep; }
};

}  // namespace shardfuzz::harness::import
