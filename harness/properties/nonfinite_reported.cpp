// Property: a planned non-finite gradient is reported where it appeared. When a "nan" or "inf"
// fault fired (a NaN/Inf written into the gradient flowing into module M's output on rank r at
// step s), rank r's first "nonfinite_grad" event is at step s, before the reduce-scatter (in its
// own contribution), in a group that holds M's parameters or the parameters that feed it (M, inside
// M, an ancestor of M, or upstream of it: an earlier block, the embedding). At step s a rank with
// no fault of its own may learn of it only through the reduce-scatter (or, with expert
// parallelism, the all-to-all), never as a non-finite gradient of its own; from step s + 1 on
// every rank's parameters carry it. Several such faults: each faulty rank answers for its own.
#include "harness/properties/property.h"

#include <ATen/ATen.h>

#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

namespace shardfuzz::harness {
namespace {

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

}  // namespace

Verdict check_nonfinite_reported(const Scenario& sc, const RunRecord& run) {
  // Per rank, its own earliest planned non-finite gradient that fired; and the earliest of all.
  std::map<int, const FaultSpec*> own;
  const FaultSpec* first = nullptr;
  auto step_of = [](const FaultSpec* spec) { return spec->in_module()->step; };
  for (const FiredFault& f : run.fired_faults) {
    const FaultSpec& spec = sc.faults.at(static_cast<std::size_t>(f.fault));
    if (!spec.is_nonfinite()) continue;
    if (!own.count(f.rank) || step_of(&spec) < step_of(own[f.rank])) own[f.rank] = &spec;
    if (!first || step_of(&spec) < step_of(first)) first = &spec;
  }
  if (own.empty()) return {"nonfinite_reported", true, true, "no non-finite gradient planned (or it never fired)"};
  if (!run.observed.ledger) return {"nonfinite_reported", true, true, "the " + run.backend + " backend has no finite check"};
  auto planned = [](const FaultSpec& spec) {
    std::ostringstream os;
    const ModuleFault& m = *spec.in_module();
    os << "planned " << spec.kind_name() << " in the gradient into " << (m.module.empty() ? "root" : m.module)
       << " on rank " << spec.rank << " at step " << m.step + 1;
    return os.str();
  };
  // Each rank's first report (timelines are per rank, in the rank's order).
  auto first_report = [](const RankRecord& r) -> const memory::TimelineEvent* {
    for (const memory::TimelineEvent& e : r.timeline)
      if (e.event == "nonfinite_grad") return &e;
    return nullptr;
  };
  auto describe = [](int rank, const memory::TimelineEvent& e) {
    std::ostringstream os;
    os << "first reported on rank " << rank << " at step " << e.step + 1 << " in group " << e.group << " ("
       << e.detail.value("param", std::string()) << ", " << e.detail.value("where", std::string()) << ")";
    return os.str();
  };
  auto reached_a_parameter = [&] {
    for (const RankRecord& any : run.ranks)
      for (const ShardRecord& shard : any.shards)
        if (shard.local.defined() && !at::isfinite(shard.local).all().item<bool>()) return true;
    return false;
  };
  std::string verdict;
  for (const RankRecord& r : run.ranks) {
    const memory::TimelineEvent* e = first_report(r);
    const std::string where = e ? e->detail.value("where", std::string()) : "";
    // A rank whose own fault comes later than its first report answers as a peer of the earlier one.
    if (own.count(r.rank) && !(e && e->step < step_of(own.at(r.rank)))) {
      const FaultSpec& spec = *own.at(r.rank);
      const ModuleFault& planned_fault = *spec.in_module();
      const std::string what = planned(spec);
      if (!e) {
        // A NaN that reached no trainable parameter (a frozen path, an input's gradient) has
        // nothing to report: every parameter is still finite after training.
        if (!reached_a_parameter())
          return {"nonfinite_reported", true, true, what + ": it reached no trainable parameter (all are finite after training)"};
        return fail(what + ": rank " + std::to_string(r.rank) +
                    " reported no non-finite gradient, yet parameters ended non-finite");
      }
      const std::string group = e->group == "root" ? "" : e->group;
      const std::string& module = planned_fault.module;
      if (e->step != planned_fault.step || where != "before_reduce_scatter" || !related(group, module))
        return fail(what + ", but " + describe(r.rank, *e) +
                    (related(group, module) ? "" : ": a group unrelated to " + (module.empty() ? "root" : module)));
      if (verdict.empty()) verdict = what + ": " + describe(r.rank, *e);
    } else if (e && (e->step < step_of(first) ||
                     (e->step == step_of(first) && !sc.expert_parallel && where == "before_reduce_scatter"))) {
      // A peer with a non-finite gradient of its own at the fault's step (or before it): the
      // runtime misplaced it. From the next step on every rank's parameters carry it (the optimizer
      // applied the reduced gradient), and with expert parallelism the all-to-all carries the
      // gradient to the peers' experts within the step.
      return fail(planned(*first) + ", but " + describe(r.rank, *e) +
                  ", a rank the fault was not planned on");
    }
  }
  if (verdict.empty()) return {"nonfinite_reported", true, true, "every faulty rank's report came from a peer's fault"};
  return {"nonfinite_reported", true, false, verdict};
}

}  // namespace shardfuzz::harness
