// The property registry.
#include "harness/properties/property.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

namespace shardfuzz::harness {

const std::vector<Property>& all_properties() {
  static const std::vector<Property> properties = {
      {"liveness",
       "every rank finished: no collective mismatch, no deadline, no exception (but the planned fault's)",
       check_liveness},
      {"faults_detected",
       "a planned fault that must stop the run stops it on every rank, each peer's error naming the faulty rank "
       "within the deadline (latency reported)",
       check_faults_detected},
      {"recovers_after_fault",
       "after a planned oom or exception every rank resets (groups sharded, nothing pending, ledger and allocator "
       "back to the step's start) and runs the step again to the end of training",
       check_recovers_after_fault},
      {"nonfinite_reported",
       "a planned NaN/Inf gradient is first reported on its rank, at its step, before the reduce-scatter, in the "
       "group of the module it entered",
       check_nonfinite_reported},
      {"per_layer_return_to_baseline",
       "after each post_backward no finished group holds a pending all-gather, unsharded params or an older "
       "group's HSDP reduce output, no all-gather is dropped unconsumed at finalize, and allocator growth per "
       "block is what the ledger explains",
       check_per_layer_return_to_baseline},
      {"reshard_after_forward_honoured",
       "at the end of every forward (with or without grad) each group asked to reshard after forward is sharded",
       check_reshard_after_forward_honoured},
      {"prefetch_schedule_honoured",
       "every prefetch is the one the policy prescribes: the implicit backward prefetch targets the group whose "
       "forward ended before the issuer's, explicit lists replace it and are issued exactly, a prefetch of a sharded "
       "group all-gathers at once, a skip only of a group with no backward left, no all-gather twice for one use",
       check_prefetch_schedule_honoured},
      {"checkpoint_policy_honoured",
       "every activation-checkpoint region runs the mode asked: selective_ops keeps every matmul-like output in "
       "forward and its recompute runs none again; the others keep nothing; each forward that saved recomputes "
       "once in the backward that follows, running what the forward ran; no region where none was asked",
       check_checkpoint_policy_honoured},
      {"flat_end_of_step_memory", "allocator bytes at the end of every step from step 2 on are equal",
       check_flat_end_of_step_memory},
      {"teardown_to_baseline", "after teardown every rank's allocator bytes are back to the pre-model baseline",
       check_teardown_to_baseline},
      {"buffers_live_as_fsdp2_holds",
       "at every event every buffer the ledger books (group, kind, bytes) is one FSDP2's lifetimes hold then "
       "(harness/lifetimes' model, stepped by the timeline), and a recovered attempt's reset returns the ledger "
       "to the step's start",
       check_buffers_live_as_fsdp2_holds},
      {"every_byte_explained",
       "within one hook (no model compute between two events) every allocator byte that came or went is a ledger "
       "byte or an unsharded gradient, and the peak passes the bytes before it only by the buffers the hook books "
       "and FSDP2's own temporaries",
       check_every_byte_explained},
      {"params_stored_as_planned",
       "every parameter is sharded in its planned dtype (the model's; float32 masters for trainable ones under "
       "mixed precision)",
       check_params_stored_as_planned},
      {"parity_with_reference", "losses and local shards equal the unsharded single-rank reference",
       check_parity_with_reference},
      {"peak_within_bound", "peak allocator bytes within the analytic bound derived from the tree",
       check_peak_within_bound},
      {"fits_device_memory",
       "with a device-memory budget, no rank ever holds more training memory than its device has (the first event "
       "past it names the layer)",
       check_fits_device_memory},
  };
  return properties;
}

std::vector<Verdict> check_properties(const Scenario& scenario, const RunRecord& run) {
  return check_properties(scenario, run, "");
}

namespace {

bool is_property(const std::string& name) {
  const auto& all = all_properties();
  return std::any_of(all.begin(), all.end(), [&](const Property& p) { return p.name == name; });
}

}  // namespace

std::vector<Verdict> check_properties(const Scenario& scenario, const RunRecord& run, const std::string& up_to) {
  const auto& properties = all_properties();
  const auto named = [&](const Property& p) { return p.name == up_to; };
  const auto last = std::find_if(properties.begin(), properties.end(), named);  // every one when none is named
  const std::size_t count = static_cast<std::size_t>(last - properties.begin()) + (last == properties.end() ? 0 : 1);
  std::vector<Verdict> out(count);
  std::vector<std::exception_ptr> threw(count);
  const auto judge = [&](std::size_t i) {
    const Property& p = properties[i];
    if (p.name != "liveness" && p.name != "faults_detected" && !run.ok()) {
      out[i] = {p.name, true, true, "skipped: the run did not complete"};
      return;
    }
    try {
      out[i] = p.check(scenario, run);
      out[i].property = p.name;
    } catch (...) {
      threw[i] = std::current_exception();
    }
  };
  // Two judges side by side, each taking the next property not yet taken: the judges are pure
  // functions of the scenario and the record, and the costly ones (per-layer memory, parity) then
  // overlap on a second core (a world-4 case's properties: 2.4 ms in a row on one core).
  std::atomic<std::size_t> next{0};
  const auto judge_all = [&] {
    for (std::size_t i = next++; i < count; i = next++) judge(i);
  };
  std::thread helper;
  if (count > 1 && run.ok()) {
    helper = std::thread([&] {
      at::init_num_threads();  // the process's one intra-op thread, as the reference's thread starts
      judge_all();
    });
  }
  judge_all();
  if (helper.joinable()) helper.join();
  for (const auto& e : threw)
    if (e) std::rethrow_exception(e);  // the first in check order, as judging in a row threw it
  return out;
}

bool needs_reference(const std::string& up_to) {
  if (!is_property(up_to)) return true;
  for (const Property& p : all_properties()) {
    if (p.name == "parity_with_reference") return true;
    if (p.name == up_to) return false;
  }
  return true;
}

const Verdict* first_failure(const std::vector<Verdict>& verdicts) {
  for (const auto& v : verdicts)
    if (!v.ok) return &v;
  return nullptr;
}

}  // namespace shardfuzz::harness
