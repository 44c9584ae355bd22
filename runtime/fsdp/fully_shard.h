// fully_shard(module, mesh, runtime, options): shard the parameters of `module` that no nested
// fully_shard already manages, and install the FSDP2 hooks. Apply bottom-up (experts, then
// blocks, then the root), as upstream requires. A 1-D mesh shards over its only dim; a 2-D mesh is
// HSDP (dim 0 replicates, dim 1 shards).
#pragma once

#include "runtime/fsdp/options.h"
#include "runtime/fsdp/state.h"
#include "runtime/mesh/device_mesh.h"
#include "runtime/nn/module.h"

#include <memory>

namespace shardfuzz::fsdp {

class RankRuntime;

std::shared_ptr<FSDPState> fully_shard(nn::Module& module, const mesh::DeviceMesh& mesh, RankRuntime& runtime,
                                       FullyShardOptions options = {});

}  // namespace shardfuzz::fsdp
