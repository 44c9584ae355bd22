// Property: a planned non-finite gradient is reported where it appeared. When a "nan" or "inf"
// fault fired (a NaN/Inf written into the gradient flowing into module M's output on rank r at
// step s), rank r's first "nonfinite_grad" event is at step s, before the reduce-scatter (in its
// own contribution), in a group that holds M's parameters or the parameters that feed it (M, inside
// M, an ancestor of M, or upstream of it: an earlier block, the embedding). At step s a rank with
// no fault of its own may learn of it only through the reduce-scatter (or, with expert
// parallelism, the all-to-all), never as a non-finite gradient of its own; from step s + 1 on
// every rank's parameters carry it. Several such faults are judged together: every report must be
// accounted for by one of them (a peer's NaN may reach a faulty rank through the reduce-scatter
// before its own is found), and each faulty rank must report its own.
#include "harness/properties/property.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

namespace shardfuzz::harness {
namespace {

using memory::Event;

Verdict fail(std::string message) { return {"nonfinite_reported", false, false, std::move(message)}; }

// Where a module sits in forward order, at block granularity: the embedding before every block,
// block k at k, the final norm and the head after every block; nullopt for the root and the
// "layers" container (ancestors of everything).
std::optional<int> block_of(const std::string& path) {
  if (path.empty() || path == "layers") return std::nullopt;
  if (path.rfind("layers.", 0) == 0) return std::atoi(path.c_str() + 7);
  if (path == "embed" || path.rfind("embed.", 0) == 0) return -1;
  return std::numeric_limits<int>::max();  // norm, out
}

// Whether the gradient flowing into `module` reaches the parameters of `group`: the group is the
// module, inside it, an ancestor of it, or upstream of it in forward order (an earlier block, the
// embedding); the blocks after it and the head are computed from its output, not into it.
bool related(const std::string& group, const std::string& module) {
  const auto g = block_of(group), m = block_of(module);
  if (!g || !m) return true;
  return *g <= *m;
}

// A planned non-finite gradient that fired.
struct Plan {
  const FaultSpec* spec;
  int step() const { return spec->in_module()->step; }
  const std::string& module() const { return spec->in_module()->module; }
};

std::string planned(const Plan& p) {
  std::ostringstream os;
  os << "planned " << p.spec->kind_name() << " in the gradient into " << (p.module().empty() ? "root" : p.module())
     << " on rank " << p.spec->rank << " at step " << p.step() + 1;
  return os.str();
}

std::string where_of(const memory::TimelineEvent& e) { return e.nonfinite_where().value_or(""); }
std::string group_of(const memory::TimelineEvent& e) { return e.group == "root" ? "" : e.group; }

std::string describe(int rank, const memory::TimelineEvent& e, bool first) {
  std::ostringstream os;
  os << (first ? "first reported" : "then reported") << " on rank " << rank << " at step " << e.step + 1 << " in group "
     << e.group << " (" << e.nonfinite_param().value_or("") << ", " << where_of(e) << ")";
  return os.str();
}

// Whether plan `p` accounts for report `e` on `rank` at p's step: a group the gradient into p's
// module reaches, found in the rank's own contribution on p's rank, and on any other rank arriving
// through the reduce-scatter (or, with expert parallelism, through the all-to-all within the step).
bool explains(const Plan& p, int rank, const memory::TimelineEvent& e, bool expert_parallel) {
  if (e.step != p.step() || !related(group_of(e), p.module())) return false;
  const std::string where = where_of(e);
  if (p.spec->rank == rank) return where == "before_reduce_scatter";
  return where == "after_reduce_scatter" || expert_parallel;
}

bool reached_a_parameter(const RunRecord& run) {
  for (const RankRecord& any : run.ranks)
    for (const ShardRecord& shard : any.shards)
      if (shard.local.defined() && !at::isfinite(shard.local).all().item<bool>()) return true;
  return false;
}

// Rank `r`'s first report that no plan accounts for (nullopt: every one is accounted for). From
// the step after the earliest plan on, every rank's parameters carry it: any report is.
std::optional<Verdict> unexplained_report(const Scenario& sc, const RankRecord& r, const std::vector<Plan>& plans,
                                          const Plan& earliest, const Plan* own) {
  bool first = true;
  for (const memory::TimelineEvent& e : r.timeline) {
    if (e.event != Event::NonfiniteGrad) continue;
    const bool explained = e.step > earliest.step() || std::any_of(plans.begin(), plans.end(), [&](const Plan& p) {
                             return explains(p, r.rank, e, sc.expert_parallel);
                           });
    if (!explained) {
      if (!own || own->step() != e.step) return fail(planned(earliest) + ", but " + describe(r.rank, e, first) + ", a rank the fault was not planned on");
      const bool near = related(group_of(e), own->module());
      return fail(planned(*own) + ", but " + describe(r.rank, e, first) +
                  (near ? "" : ": a group unrelated to " + (own->module().empty() ? "root" : own->module())));
    }
    first = false;
  }
  return std::nullopt;
}

}  // namespace

Verdict check_nonfinite_reported(const Scenario& sc, const RunRecord& run) {
  // The plans that fired; per rank its earliest; and the earliest of all.
  std::vector<Plan> plans;
  std::map<int, Plan> own;
  for (const FiredFault& f : run.fired_faults) {
    const FaultSpec& spec = sc.faults.at(static_cast<std::size_t>(f.fault));
    if (!spec.is_nonfinite()) continue;
    const Plan p{&spec};
    plans.push_back(p);
    if (!own.count(f.rank) || p.step() < own.at(f.rank).step()) own.insert_or_assign(f.rank, p);
  }
  if (plans.empty()) return {"nonfinite_reported", true, true, "no non-finite gradient planned (or it never fired)"};
  if (!run.observed.ledger) return {"nonfinite_reported", true, true, "the " + run.backend + " backend has no finite check"};
  const Plan earliest = *std::min_element(plans.begin(), plans.end(), [](const Plan& a, const Plan& b) { return a.step() < b.step(); });
  // Every report on every rank must be accounted for by some plan (several plans are judged
  // together: a peer's NaN may reach a faulty rank through the reduce-scatter before its own is
  // found), and each faulty rank must report its own in a group its fault's gradient reaches.
  std::string verdict;
  for (const RankRecord& r : run.ranks) {
    const Plan* mine = own.count(r.rank) ? &own.at(r.rank) : nullptr;
    if (auto bad = unexplained_report(sc, r, plans, earliest, mine)) return *bad;
    if (!mine) continue;
    const memory::TimelineEvent* first_report = nullptr;
    const memory::TimelineEvent* own_report = nullptr;
    for (const memory::TimelineEvent& e : r.timeline) {
      if (e.event != Event::NonfiniteGrad) continue;
      if (!first_report) first_report = &e;
      if (!own_report && explains(*mine, r.rank, e, false)) own_report = &e;
    }
    // A rank that heard of an earlier step's fault before its own answers as a peer of that one.
    if (first_report && first_report->step < mine->step()) continue;
    if (own_report) {
      if (verdict.empty()) verdict = planned(*mine) + ": " + describe(r.rank, *own_report, own_report == first_report);
      continue;
    }
    // Peers' faults account for its reports at its own step (its own reached no parameter, or the
    // group was reduced before its own arrived); a first report only at a later step is late.
    if (first_report && first_report->step == mine->step()) continue;
    if (first_report) return fail(planned(*mine) + ", but " + describe(r.rank, *first_report, true));
    // A NaN that reached no trainable parameter (a frozen path, an input's gradient) has nothing
    // to report: every parameter is still finite after training.
    if (!reached_a_parameter(run))
      return {"nonfinite_reported", true, true, planned(*mine) + ": it reached no trainable parameter (all are finite after training)"};
    return fail(planned(*mine) + ": rank " + std::to_string(r.rank) + " reported no non-finite gradient, yet parameters ended non-finite");
  }
  if (verdict.empty()) return {"nonfinite_reported", true, true, "every faulty rank's report came from a peer's fault"};
  return {"nonfinite_reported", true, false, verdict};
}

}  // namespace shardfuzz::harness
