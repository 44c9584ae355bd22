// Reading the torch worker's rank-R.json documents.
#include "harness/backends/torch/torch_recording.h"

#include "harness/scenario/scenario.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>

namespace shardfuzz::harness::torch_backend {
namespace {

std::vector<std::string> sorted_strings(const nlohmann::json& j) {
  auto v = j.get<std::vector<std::string>>();
  std::sort(v.begin(), v.end());
  return v;
}

const nlohmann::json& field(const nlohmann::json& doc, const char* name, const std::string& where) {
  if (!doc.is_object() || !doc.contains(name)) throw std::invalid_argument(where + ": the recording lacks '" + name + "'");
  return doc.at(name);
}

}  // namespace

memory::TimelineEvent event_from_recording(const nlohmann::json& j) {
  memory::TimelineEvent e;
  e.event = memory::event_field(j);
  e.group = j.at("group").get<std::string>();
  if (j.contains("detail") && j.at("detail").is_object()) e.detail = j.at("detail");
  e.category = j.contains("category") ? memory::category_field(j) : memory::Category::Fsdp;
  e.rank = j.value("rank", 0);
  e.step = j.value("step", 0);
  if (j.contains("allocated_bytes") && j.at("allocated_bytes").is_number())
    e.allocated_bytes = j.at("allocated_bytes").get<int64_t>();
  e.pending_all_gather = sorted_strings(j.at("pending_all_gather"));
  e.unsharded = sorted_strings(j.at("unsharded"));
  e.finished_backward = sorted_strings(j.value("finished_backward", nlohmann::json::array()));
  e.pending_all_gather_bytes = j.value("pending_all_gather_bytes", std::map<std::string, int64_t>{});
  e.all_reduce_input_bytes = j.value("all_reduce_input_bytes", std::map<std::string, int64_t>{});
  return e;
}

RunRecord run_record_from_recording(const std::vector<nlohmann::json>& rank_docs) {
  RunRecord run;
  run.backend = "torch";
  run.observed.ledger = false;
  run.observed.checkpoints = false;
  run.observed.baseline = false;
  run.observed.shard_values = false;
  run.device = rank_docs.empty() ? "cpu" : rank_docs.front().value("device", "cpu");
  run.observed.allocator = run.device == "cuda";
  for (std::size_t r = 0; r < rank_docs.size(); ++r) {
    const nlohmann::json& doc = rank_docs[r];
    const std::string where = "rank-" + std::to_string(r) + ".json";
    RankRecord rec;
    rec.rank = static_cast<int>(r);
    int64_t origin = -1;
    for (const auto& j : field(doc, "timeline", where)) {
      try {
        rec.timeline.push_back(event_from_recording(j));
      } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(where + ": event " + std::to_string(rec.timeline.size()) + ": " + e.what());
      }
      // Allocated bytes above the first event's, as the native probe counts from the rank's start.
      if (run.observed.allocator) {
        if (origin < 0) origin = rec.timeline.back().allocated_bytes;
        rec.timeline.back().allocated_bytes -= origin;
      }
    }
    rec.losses = field(doc, "losses", where).get<std::vector<double>>();
    for (const auto& s : field(doc, "shards", where)) {
      ShardRecord shard;
      shard.group = s.at("group").get<std::string>();
      shard.fqn = s.at("fqn").get<std::string>();
      shard.shard_rank = s.at("shard_rank").get<int>();
      shard.shard_size = s.at("shard_size").get<int>();
      shard.shard_dim = s.at("shard_dim").get<int>();
      // Shape and dtype only: the values are torch's own draws (observed.shard_values is false).
      shard.local = at::empty(s.at("shape").get<std::vector<int64_t>>(),
                              at::TensorOptions().dtype(scalar_type_of(s.at("dtype").get<std::string>())));
      shard.padded_bytes = s.at("padded_bytes").get<int64_t>();
      shard.unsharded_bytes = s.at("unsharded_bytes").get<int64_t>();
      shard.requires_grad = s.at("requires_grad").get<bool>();
      rec.shards.push_back(std::move(shard));
    }
    run.ranks.push_back(std::move(rec));
  }
  return run;
}

}  // namespace shardfuzz::harness::torch_backend
