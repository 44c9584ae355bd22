// RankRecord <-> JSON.
#include "harness/run/run_record_json.h"

#include "harness/scenario/scenario.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace shardfuzz::harness {
namespace {

using json = nlohmann::json;

json events_json(const std::vector<memory::TimelineEvent>& events) {
  json out = json::array();
  for (const auto& e : events) out.push_back(e.to_json());
  return out;
}

std::vector<memory::TimelineEvent> events_from(const json& j) {
  std::vector<memory::TimelineEvent> out;
  for (const auto& e : j) out.push_back(memory::TimelineEvent::from_json(e));
  return out;
}

// JSON has no NaN or infinity: a loss that became one travels as its name.
json doubles_json(const std::vector<double>& values) {
  json out = json::array();
  for (double v : values) {
    if (std::isfinite(v))
      out.push_back(v);
    else
      out.push_back(std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
  }
  return out;
}

std::vector<double> doubles_from(const json& j) {
  std::vector<double> out;
  for (const auto& v : j) {
    if (v.is_number()) {
      out.push_back(v.get<double>());
      continue;
    }
    const std::string name = v.get<std::string>();
    if (name == "nan")
      out.push_back(std::numeric_limits<double>::quiet_NaN());
    else if (name == "inf" || name == "-inf")
      out.push_back(name == "inf" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
    else
      throw std::invalid_argument("'" + name + "' is not a number");
  }
  return out;
}

json kinds_json(const memory::KindTotals& totals) { return std::vector<int64_t>(totals.begin(), totals.end()); }

memory::KindTotals kinds_from(const json& j) {
  memory::KindTotals t{};
  const auto v = j.get<std::vector<int64_t>>();
  if (v.size() != t.size()) throw std::invalid_argument("expected " + std::to_string(t.size()) + " buffer kinds");
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}

json tensor_json(const at::Tensor& t) {
  if (!t.defined()) return nullptr;
  const at::Tensor d = t.to(at::kCPU, at::kDouble).contiguous();
  return {{"dtype", dtype_name(t.scalar_type())},
          {"shape", t.sizes().vec()},
          {"values", doubles_json(std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel()))}};
}

at::Tensor tensor_from(const json& j) {
  if (j.is_null()) return {};
  auto values = doubles_from(j.at("values"));
  at::Tensor d = at::tensor(values, at::TensorOptions().dtype(at::kDouble));
  return d.reshape(j.at("shape").get<std::vector<int64_t>>()).to(scalar_type_of(j.at("dtype").get<std::string>()));
}

json shard_json(const ShardRecord& s) {
  return {{"group", s.group},          {"fqn", s.fqn},
          {"shard_rank", s.shard_rank}, {"shard_size", s.shard_size},
          {"shard_dim", s.shard_dim},   {"full_begin", s.full_begin},
          {"full_rows", s.full_rows},   {"local", tensor_json(s.local)},
          {"padded_bytes", s.padded_bytes}, {"unsharded_bytes", s.unsharded_bytes},
          {"requires_grad", s.requires_grad}};
}

ShardRecord shard_from(const json& j) {
  ShardRecord s;
  s.group = j.at("group").get<std::string>();
  s.fqn = j.at("fqn").get<std::string>();
  s.shard_rank = j.at("shard_rank").get<int>();
  s.shard_size = j.at("shard_size").get<int>();
  s.shard_dim = j.at("shard_dim").get<int>();
  s.full_begin = j.at("full_begin").get<int64_t>();
  s.full_rows = j.at("full_rows").get<int64_t>();
  s.local = tensor_from(j.at("local"));
  s.padded_bytes = j.at("padded_bytes").get<int64_t>();
  s.unsharded_bytes = j.at("unsharded_bytes").get<int64_t>();
  s.requires_grad = j.at("requires_grad").get<bool>();
  return s;
}

json recovery_json(const RecoveryRecord& r) {
  return {{"step", r.step},
          {"attempt", r.attempt},
          {"error", r.error},
          {"error_kind", r.error_kind},
          {"caught_at_seconds", r.caught_at_seconds},
          {"recovered_at_seconds", r.recovered_at_seconds},
          {"bytes_at_step_begin", r.bytes_at_step_begin},
          {"bytes_after_reset", r.bytes_after_reset},
          {"ledger_at_step_begin", kinds_json(r.ledger_at_step_begin)},
          {"ledger_after_reset", kinds_json(r.ledger_after_reset)},
          {"unsharded_after_reset", r.unsharded_after_reset},
          {"pending_all_gather_after_reset", r.pending_all_gather_after_reset},
          {"events", events_json(r.events)}};
}

RecoveryRecord recovery_from(const json& j) {
  RecoveryRecord r;
  r.step = j.at("step").get<int>();
  r.attempt = j.at("attempt").get<int>();
  r.error = j.at("error").get<std::string>();
  r.error_kind = j.at("error_kind").get<std::string>();
  r.caught_at_seconds = j.at("caught_at_seconds").get<double>();
  r.recovered_at_seconds = j.at("recovered_at_seconds").get<double>();
  r.bytes_at_step_begin = j.at("bytes_at_step_begin").get<int64_t>();
  r.bytes_after_reset = j.at("bytes_after_reset").get<int64_t>();
  r.ledger_at_step_begin = kinds_from(j.at("ledger_at_step_begin"));
  r.ledger_after_reset = kinds_from(j.at("ledger_after_reset"));
  r.unsharded_after_reset = j.at("unsharded_after_reset").get<std::vector<std::string>>();
  r.pending_all_gather_after_reset = j.at("pending_all_gather_after_reset").get<std::vector<std::string>>();
  r.events = events_from(j.at("events"));
  return r;
}

}  // namespace

json to_json(const comm::ScheduleRecord& record) {
  json switches = json::array();
  for (const auto& [decision, candidate] : record.switches)
    switches.push_back({{"decision", decision}, {"candidate", candidate}});
  return {{"decisions", record.decisions}, {"switches", switches}, {"clock_ms", record.clock_ms},
          {"fingerprint", comm::fingerprint_hex(record.fingerprint)}};
}

comm::ScheduleRecord schedule_record_from_json(const json& j) {
  comm::ScheduleRecord r;
  r.scheduled = true;
  r.decisions = j.at("decisions").get<uint64_t>();
  for (const auto& s : j.at("switches"))
    r.switches.emplace_back(s.at("decision").get<uint64_t>(), s.at("candidate").get<uint64_t>());
  r.clock_ms = j.at("clock_ms").get<int64_t>();
  r.fingerprint = std::stoull(j.at("fingerprint").get<std::string>(), nullptr, 16);
  return r;
}

json to_json(const RankRecord& r) {
  json shards = json::array(), recoveries = json::array();
  for (const auto& s : r.shards) shards.push_back(shard_json(s));
  for (const auto& x : r.recoveries) recoveries.push_back(recovery_json(x));
  return {{"rank", r.rank},
          {"timeline", events_json(r.timeline)},
          {"losses", doubles_json(r.losses)},
          {"step_end_bytes", r.step_end_bytes},
          {"shards", shards},
          {"baseline_bytes", r.baseline_bytes},
          {"teardown_bytes", r.teardown_bytes},
          {"training_peak_bytes", r.training_peak_bytes},
          {"peak_above_current_at_reset", r.peak_above_current_at_reset},
          {"recoveries", recoveries},
          {"error", r.error},
          {"failed_at_seconds", r.failed_at_seconds},
          {"collectives_after_abort", r.collectives_after_abort},
          {"device_snapshot", r.device_snapshot}};
}

RankRecord rank_record_from_json(const json& j) {
  std::string field = "rank record";
  try {
    RankRecord r;
    field = "rank";
    r.rank = j.at("rank").get<int>();
    field = "timeline";
    r.timeline = events_from(j.at("timeline"));
    field = "losses";
    r.losses = doubles_from(j.at("losses"));
    field = "step_end_bytes";
    r.step_end_bytes = j.at("step_end_bytes").get<std::vector<int64_t>>();
    field = "shards";
    for (const auto& s : j.at("shards")) r.shards.push_back(shard_from(s));
    field = "baseline_bytes";
    r.baseline_bytes = j.at("baseline_bytes").get<int64_t>();
    r.teardown_bytes = j.at("teardown_bytes").get<int64_t>();
    r.training_peak_bytes = j.at("training_peak_bytes").get<int64_t>();
    field = "peak_above_current_at_reset";
    r.peak_above_current_at_reset = j.value("peak_above_current_at_reset", int64_t{0});
    field = "recoveries";
    for (const auto& x : j.at("recoveries")) r.recoveries.push_back(recovery_from(x));
    field = "error";
    r.error = j.at("error").get<std::string>();
    r.failed_at_seconds = j.at("failed_at_seconds").get<double>();
    field = "collectives_after_abort";
    r.collectives_after_abort = j.value("collectives_after_abort", -1);
    r.device_snapshot = j.value("device_snapshot", json());
    return r;
  } catch (const json::exception& e) {
    throw std::invalid_argument("rank record: " + field + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("rank record: " + field + ": " + e.what());
  }
}

json to_json(const FiredFault& f) {
  return {{"fault", f.fault}, {"rank", f.rank},       {"kind", f.kind},
          {"group", f.group}, {"op", f.op},           {"at_seconds", f.at_seconds},
          {"step", f.step}};
}

FiredFault fired_fault_from_json(const json& j) {
  try {
    FiredFault f;
    f.fault = j.at("fault").get<int>();
    f.rank = j.at("rank").get<int>();
    f.kind = j.at("kind").get<std::string>();
    f.group = j.at("group").get<std::string>();
    f.op = j.at("op").get<std::string>();
    f.at_seconds = j.at("at_seconds").get<double>();
    f.step = j.at("step").get<int>();
    return f;
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("fired fault: ") + e.what());
  }
}

}  // namespace shardfuzz::harness
