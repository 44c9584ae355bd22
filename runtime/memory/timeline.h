// The timeline: one record per scheduling event on one rank, with the memory picture right after
// it (allocator bytes, ledger totals by kind, and which groups hold pending all-gathers or
// unsharded params). It is what properties, reports and conformance read.
#pragma once

#include "runtime/memory/ledger.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace shardfuzz::memory {

struct TimelineEvent {
  std::string event;    // pre_forward, post_forward, pre_backward_begin, prefetch, reshard, ...
  std::string group;    // module path of the FSDP group ("root" for the root module)
  nlohmann::json detail = nlohmann::json::object();  // in_backward, target, pass, dropped_pending_all_gather
  std::string category = "fsdp";  // "fsdp" for scheduler events, "train" for step phases
  int rank = 0;
  int step = 0;
  int64_t at_ns = 0;  // when it was recorded (steady clock; 0: not known, e.g. read from a recorded trace)
  int64_t allocated_bytes = 0;  // the allocator probe, this rank, above the rank runtime's start
  int64_t peak_bytes = 0;       // peak since the rank runtime's start, same origin
  int64_t reserved_bytes = 0;   // on a CUDA device: what its caching allocator holds (absolute; 0 on CPU)
  KindTotals ledger{};          // ledger bytes by kind, this rank
  // Gradients autograd accumulated into unsharded parameters and not yet reduce-scattered:
  // autograd owns them, so they are not ledger entries, but they are what a group in backward
  // legitimately holds (a group managing several blocks holds them until its post_backward).
  int64_t unsharded_grad_bytes = 0;
  std::vector<std::string> pending_all_gather;  // sorted group names
  std::vector<std::string> unsharded;           // sorted group names
  std::vector<std::string> finished_backward;   // groups whose post_backward ran in this backward
  std::map<std::string, int64_t> pending_all_gather_bytes;  // bytes each pending all-gather holds
  std::map<std::string, int64_t> all_reduce_input_bytes;    // HSDP reduce outputs kept, by group

  // Pending all-gathers held by groups that already finished backward: the leak.
  std::vector<std::string> stale_all_gathers() const;
  int64_t stale_all_gather_bytes() const;
  int64_t pending_total_bytes() const;

  int64_t ledger_total() const;
  nlohmann::json to_json() const;
  // The inverse of to_json (nlohmann::json::exception on a malformed event).
  static TimelineEvent from_json(const nlohmann::json& json);
};

// The events of one step and category, in order.
std::vector<TimelineEvent> events_of_step(const std::vector<TimelineEvent>& events, int step,
                                          const std::string& category = "fsdp");

class Timeline {
 public:
  void record(TimelineEvent event);
  std::vector<TimelineEvent> events() const;
  std::vector<TimelineEvent> events_of_step(int step, const std::string& category = "fsdp") const;
  void clear();
  std::size_t size() const;
  // Removes and returns the events from index `first` on (a failed step's, kept apart by recovery;
  // from 0: every event, moved out rather than copied, as a finished rank hands its record over).
  std::vector<TimelineEvent> take_from(std::size_t first);

 private:
  mutable std::mutex mu_;
  std::vector<TimelineEvent> events_;
};

}  // namespace shardfuzz::memory
