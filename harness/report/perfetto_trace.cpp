// Timeline events to trace events: slices by pairing begin and end events per group, async
// all-gathers by following the pending set, counters from each event's memory picture.
#include "harness/report/perfetto_trace.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace shardfuzz::harness {
namespace {

using json = nlohmann::json;
using memory::Category;
using memory::Event;
using memory::TimelineEvent;

constexpr int kTrainThread = 0;

// An event's detail as trace args (the runtime records "no detail" as null or as {}).
json args_of(const TimelineEvent& e) { return e.detail.is_object() ? e.detail : json::object(); }

struct OpenSlice {
  std::string name;
  double begin_us = 0;
  json args = json::object();
};

// One rank's events in time order, the failed runs of recovered steps included.
std::vector<TimelineEvent> events_of(const RankRecord& r) {
  std::vector<TimelineEvent> events = r.timeline;
  for (const RecoveryRecord& rec : r.recoveries) events.insert(events.end(), rec.events.begin(), rec.events.end());
  std::stable_sort(events.begin(), events.end(),
                   [](const TimelineEvent& a, const TimelineEvent& b) { return a.at_ns < b.at_ns; });
  return events;
}

class RankTrace {
 public:
  RankTrace(int rank, int64_t origin_ns, json& out) : rank_(rank), origin_ns_(origin_ns), out_(out) {
    meta("process_name", kTrainThread, "rank " + std::to_string(rank));
    meta("process_sort_index", kTrainThread, rank);
    meta("thread_name", kTrainThread, "train");
  }

  void add(const TimelineEvent& e, std::size_t index) {
    const double ts = e.at_ns > 0 ? static_cast<double>(e.at_ns - origin_ns_) / 1000.0 : static_cast<double>(index);
    last_ts_ = std::max(last_ts_, ts);
    close_consumed_all_gathers(e, ts);
    if (e.category == Category::Train) train(e, ts);
    else if (e.category == Category::Recovery) recovery(e, ts);
    else fsdp(e, ts);
    counters(e, ts);
    last_ = e;
  }

  void finish() {
    for (auto& [tid, stack] : open_)
      while (!stack.empty()) close_top(tid, last_ts_, {{"unfinished", true}});
    for (auto& [group, ag] : all_gathers_) async_end(group, ag, last_ts_);
  }

 private:
  void meta(const std::string& what, int tid, const json& value) {
    out_.push_back({{"name", what}, {"ph", "M"}, {"pid", rank_}, {"tid", tid},
                    {"args", {{what == "process_sort_index" ? "sort_index" : "name", value}}}});
  }

  int thread_of(const std::string& group) {
    if (group.empty()) return kTrainThread;
    auto it = tids_.find(group);
    if (it != tids_.end()) return it->second;
    const int tid = static_cast<int>(tids_.size()) + 1;
    tids_[group] = tid;
    meta("thread_name", tid, group);
    return tid;
  }

  void open(int tid, std::string name, double ts, json args = json::object()) {
    open_[tid].push_back({std::move(name), ts, std::move(args)});
  }
  void close_top(int tid, double ts, const json& more = json::object()) {
    OpenSlice s = std::move(open_[tid].back());
    open_[tid].pop_back();
    json args = s.args;
    args.update(more);
    out_.push_back({{"name", s.name}, {"ph", "X"}, {"pid", rank_}, {"tid", tid}, {"ts", s.begin_us},
                    {"dur", std::max(0.0, ts - s.begin_us)}, {"args", args}});
  }
  // Closes the newest open slice whose name starts with `prefix` (and any opened inside it).
  bool close(int tid, const std::string& prefix, double ts, const json& more = json::object()) {
    auto& stack = open_[tid];
    auto it = std::find_if(stack.rbegin(), stack.rend(),
                           [&](const OpenSlice& s) { return s.name.rfind(prefix, 0) == 0; });
    if (it == stack.rend()) return false;
    const std::size_t depth = static_cast<std::size_t>(std::distance(it, stack.rend()));
    while (stack.size() >= depth) close_top(tid, ts, stack.size() == depth ? more : json::object());
    return true;
  }
  void instant(int tid, const std::string& name, double ts, const json& args) {
    out_.push_back({{"name", name}, {"ph", "i"}, {"s", "t"}, {"pid", rank_}, {"tid", tid}, {"ts", ts}, {"args", args}});
  }

  void train(const TimelineEvent& e, double ts) {
    const std::string step = "step " + std::to_string(e.step + 1);
    if (e.event == Event::StepBegin) {
      open(kTrainThread, step, ts);
      phase_begin_ = ts;
      return;
    }
    static const std::map<Event, std::string> phases = {{Event::ForwardEnd, "forward"},
                                                        {Event::BackwardEnd, "backward"},
                                                        {Event::OptimizerStep, "optimizer step"},
                                                        {Event::ZeroGrad, "zero_grad"},
                                                        {Event::EvalForwardEnd, "eval forward"}};
    if (auto it = phases.find(e.event); it != phases.end()) {
      out_.push_back({{"name", it->second}, {"ph", "X"}, {"pid", rank_}, {"tid", kTrainThread}, {"ts", phase_begin_},
                      {"dur", std::max(0.0, ts - phase_begin_)}, {"args", args_of(e)}});
      phase_begin_ = ts;
      return;
    }
    if (e.event == Event::StepEnd) {
      if (!close(kTrainThread, step, ts, args_of(e))) instant(kTrainThread, memory::name_of(e.event), ts, args_of(e));
      return;
    }
    instant(kTrainThread, memory::name_of(e.event), ts, args_of(e));
  }

  void recovery(const TimelineEvent& e, double ts) {
    if (e.event == Event::Recovered) {
      // The failed run ends here: every slice still open belonged to it.
      for (auto& [tid, stack] : open_)
        while (!stack.empty()) close_top(tid, ts, {{"failed_run", true}});
      instant(kTrainThread, memory::name_of(e.event), ts, args_of(e));
      return;
    }
    instant(thread_of(e.group), memory::name_of(e.event), ts, args_of(e));
  }

  void fsdp(const TimelineEvent& e, double ts) {
    const int tid = thread_of(e.group);
    const bool in_backward = e.in_backward();
    if (e.event == Event::PreForward) {
      open(tid, in_backward ? "recompute" : "forward", ts);
    } else if (e.event == Event::PostForward) {
      if (!close(tid, "recompute", ts) && !close(tid, "forward", ts))
        instant(tid, memory::name_of(e.event), ts, args_of(e));
    } else if (e.event == Event::PreBackwardBegin) {
      open(tid, "backward", ts);
    } else if (e.event == Event::PostBackward) {
      if (!close(tid, "backward", ts)) instant(tid, "post_backward (catch-all)", ts, args_of(e));
    } else if (e.event == Event::AllGatherIssued) {
      const auto bytes = e.pending_all_gather_bytes.find(e.group);
      AllGather ag{next_id_++, bytes == e.pending_all_gather_bytes.end() ? 0 : bytes->second, "all_gather " + e.group};
      json args = {{"bytes", ag.bytes}};
      // A prefetch records itself just before the all-gather it issues: the slice is the prefetch.
      if (last_.event == Event::Prefetch && last_.prefetch_target() == e.group) {
        ag.name = "prefetch all_gather " + e.group;
        args["issuer"] = last_.group;
        args["pass"] = last_.prefetch_pass().value_or("");
      }
      out_.push_back({{"name", ag.name}, {"cat", "all_gather"}, {"ph", "b"}, {"id", ag.id}, {"pid", rank_}, {"tid", tid},
                      {"ts", ts}, {"args", args}});
      all_gathers_[e.group] = std::move(ag);
    } else if (e.event != Event::PreBackwardEnd) {
      instant(tid, memory::name_of(e.event), ts, args_of(e));  // reshard, prefetch, finalize_backward, ...
    }
  }

  struct AllGather {
    int64_t id = 0;
    int64_t bytes = 0;
    std::string name;
  };
  void async_end(const std::string& group, const AllGather& ag, double ts) {
    out_.push_back({{"name", ag.name}, {"cat", "all_gather"}, {"ph", "e"}, {"id", ag.id}, {"pid", rank_},
                    {"tid", thread_of(group)}, {"ts", ts}});
  }
  // An all-gather ends when its group no longer holds it pending (waited on, or dropped).
  void close_consumed_all_gathers(const TimelineEvent& e, double ts) {
    for (auto it = all_gathers_.begin(); it != all_gathers_.end();) {
      if (std::binary_search(e.pending_all_gather.begin(), e.pending_all_gather.end(), it->first)) {
        ++it;
        continue;
      }
      async_end(it->first, it->second, ts);
      it = all_gathers_.erase(it);
    }
  }

  void counters(const TimelineEvent& e, double ts) {
    json ledger = json::object();
    for (int k = 0; k < memory::kBufferKinds; ++k) ledger[memory::to_string(static_cast<memory::BufferKind>(k))] = e.ledger[k];
    out_.push_back({{"name", "allocator bytes"}, {"ph", "C"}, {"pid", rank_}, {"tid", kTrainThread}, {"ts", ts},
                    {"args", {{"bytes", e.allocated_bytes}}}});
    out_.push_back({{"name", "ledger bytes"}, {"ph", "C"}, {"pid", rank_}, {"tid", kTrainThread}, {"ts", ts}, {"args", ledger}});
    out_.push_back({{"name", "pending all-gather bytes"}, {"ph", "C"}, {"pid", rank_}, {"tid", kTrainThread}, {"ts", ts},
                    {"args", {{"bytes", e.pending_total_bytes()}}}});
  }

  int rank_;
  int64_t origin_ns_;
  json& out_;
  std::map<std::string, int> tids_;
  std::map<int, std::vector<OpenSlice>> open_;
  std::map<std::string, AllGather> all_gathers_;
  int64_t next_id_ = 1;
  double phase_begin_ = 0;
  double last_ts_ = 0;
  TimelineEvent last_;
};

}  // namespace

nlohmann::json perfetto_trace(const Scenario& sc, const RunRecord& run) {
  json events = json::array();
  int64_t origin = 0;
  for (const RankRecord& r : run.ranks)
    for (const TimelineEvent& e : events_of(r))
      if (e.at_ns > 0 && (origin == 0 || e.at_ns < origin)) origin = e.at_ns;
  for (const RankRecord& r : run.ranks) {
    RankTrace trace(r.rank, origin, events);
    const std::vector<TimelineEvent> ordered = events_of(r);
    for (std::size_t i = 0; i < ordered.size(); ++i) trace.add(ordered[i], i);
    trace.finish();
  }
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"scenario", sc.name}, {"profile", sc.profile.name}, {"world_size", sc.world_size}, {"backend", run.backend},
            {"error", run.error}}}};
}

}  // namespace shardfuzz::harness
