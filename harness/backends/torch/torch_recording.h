// A torch worker's recording as a RunRecord: per rank, the events the prelude's recorder wrote
// after every FSDPParamGroup transition and step phase (with the pending all-gathers, unsharded
// groups, finished groups, HSDP reduce outputs and, on CUDA, allocated bytes), the losses, and the
// shards' shapes and dtypes.
#pragma once

#include "harness/run/run_record.h"

#include <nlohmann/json.hpp>

#include <vector>

namespace shardfuzz::harness::torch_backend {

memory::TimelineEvent event_from_recording(const nlohmann::json& event);
// `rank_docs`: each rank's rank-R.json, in rank order. Throws std::invalid_argument naming the
// field a document lacks.
RunRecord run_record_from_recording(const std::vector<nlohmann::json>& rank_docs);

}  // namespace shardfuzz::harness::torch_backend
