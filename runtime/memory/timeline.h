// The timeline: one record per scheduling event on one rank, with the memory picture right after
// it (allocator bytes, ledger totals by kind, and which groups hold pending all-gathers or
// unsharded params). It is what properties, reports and conformance read.
#pragma once

#include "runtime/memory/event.h"
#include "runtime/memory/ledger.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace shardfuzz::memory {

struct TimelineEvent {
  Event event = Event::PreForward;  // event.h: the vocabulary, with upstream's names
  std::string group;    // module path of the FSDP group ("root" for the root module)
  // What the event adds (event.h lists the keys per event); read it through the accessors below.
  nlohmann::json detail = nlohmann::json::object();
  Category category = Category::Fsdp;  // Fsdp for scheduler events, Train for step phases, ...
  int rank = 0;
  int step = 0;
  int64_t at_ns = 0;  // when it was recorded (steady clock; 0: not known, e.g. read from a recorded trace)
  int64_t allocated_bytes = 0;  // the allocator probe, this rank, above the rank runtime's start
  int64_t peak_bytes = 0;       // peak since the rank runtime's start, same origin
  int64_t reserved_bytes = 0;   // on a CUDA device: what its caching allocator holds (absolute; 0 on CPU)
  KindTotals ledger{};          // ledger bytes by kind, this rank
  // The same by group (groups holding nothing left out): what harness/lifetimes compares, at every
  // event, with the buffers FSDP2 should hold. Empty in a trace with no ledger (torch).
  std::map<std::string, KindTotals> ledger_by_group;
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

  // The detail's fields, typed. Each is empty (or false, or 0) when the detail lacks the key or
  // holds it with another type (a hand-written or foreign timeline), never an exception.
  std::optional<std::string> prefetch_target() const;  // prefetch: the group it unshards
  std::optional<std::string> prefetch_pass() const;    // prefetch: "forward" or "backward"
  std::optional<std::string> skipped() const;          // prefetch: why the profile skipped it
  std::optional<std::string> state() const;            // all_gather_issued, reshard: the training state
  bool kept() const;                        // reshard: a FORWARD reshard that kept the parameters
  bool in_backward() const;                 // pre_forward, post_forward: ran inside backward (AC recompute)
  bool dropped_pending_all_gather() const;  // finalize_backward
  std::optional<int> micro_batch() const;   // forward_end, backward_end
  std::optional<std::string> nonfinite_param() const;  // nonfinite_grad: the first parameter
  std::optional<std::string> nonfinite_where() const;  // nonfinite_grad: before/after_reduce_scatter
  std::optional<std::string> checkpoint_mode() const;  // checkpoint_*: the region's AC mode
  struct CheckpointCounts {  // checkpoint_*: what the region reports (0 where absent)
    int64_t saves = 0, matmul_like_ran = 0, outputs_kept = 0, bytes_kept = 0, outputs_reused = 0;
  };
  CheckpointCounts checkpoint_counts() const;

  nlohmann::json to_json() const;
  // The inverse of to_json (nlohmann::json::exception on a malformed event; an unknown event or
  // category name is one, naming the field, the value and the known names).
  static TimelineEvent from_json(const nlohmann::json& json);
};

// Ledger bytes by kind as JSON ({"sharded_param": 4096, ...}, kinds holding nothing left out) and
// back (nlohmann::json::exception naming an unknown kind).
nlohmann::json kind_totals_to_json(const KindTotals& totals);
KindTotals kind_totals_from_json(const nlohmann::json& j);

// The name of a JSON field ("event", "category") read into its enum, or nlohmann::json::exception
// naming the field, the value and the known names (timelines come from users and torch recorders).
Event event_field(const nlohmann::json& j, const char* field = "event");
Category category_field(const nlohmann::json& j, const char* field = "category");

// The events of one step and category, in order.
std::vector<TimelineEvent> events_of_step(const std::vector<TimelineEvent>& events, int step,
                                          Category category = Category::Fsdp);

class Timeline {
 public:
  void record(TimelineEvent event);
  std::vector<TimelineEvent> events() const;
  std::vector<TimelineEvent> events_of_step(int step, Category category = Category::Fsdp) const;
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
