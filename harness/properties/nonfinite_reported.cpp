// Property: a planned non-finite gradient is reported where it appeared. When a "nan" or "inf"
// fault fired (a NaN/Inf written into the gradient flowing into module M's output on rank r at
// step s), rank r's first "nonfinite_grad" event is at step s, before the reduce-scatter (in its
// own contribution), in a group that holds M's parameters or the parameters that feed it (the
// group is M, inside M, or an ancestor of M). At step s a peer may learn of it only through the
// reduce-scatter (or, with expert parallelism, the all-to-all), never as a non-finite gradient of
// its own; from step s + 1 on every rank's parameters carry it.
#include "harness/properties/property.h"

#include <ATen/ATen.h>

#include <sstream>

namespace shardfuzz::harness {
namespace {

Verdict fail(std::string message) { return {"nonfinite_reported", false, false, std::move(message)}; }

bool related(const std::string& group, const std::string& module) {
  auto within = [](const std::string& inner, const std::string& outer) {
    return outer.empty() || inner == outer || inner.rfind(outer + ".", 0) == 0;
  };
  return within(group, module) || within(module, group);
}

}  // namespace

Verdict check_nonfinite_reported(const Scenario& sc, const RunRecord& run) {
  const FiredFault* fired = nullptr;
  for (const FiredFault& f : run.fired_faults)
    if (sc.faults.at(static_cast<std::size_t>(f.fault)).is_nonfinite() && (!fired || f.at_seconds < fired->at_seconds))
      fired = &f;
  if (!fired) return {"nonfinite_reported", true, true, "no non-finite gradient planned (or it never fired)"};
  if (!run.observed.ledger) return {"nonfinite_reported", true, true, "the " + run.backend + " backend has no finite check"};
  const FaultSpec& spec = sc.faults.at(static_cast<std::size_t>(fired->fault));
  const std::string module = spec.module.empty() ? "root" : spec.module;
  std::ostringstream what;
  what << "planned " << spec.kind << " in the gradient into " << module << " on rank " << spec.rank << " at step "
       << spec.step + 1;
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
  std::string verdict;
  for (const RankRecord& r : run.ranks) {
    const memory::TimelineEvent* e = first_report(r);
    if (r.rank == spec.rank) {
      if (!e) {
        // A NaN that reached no trainable parameter (a frozen path, an input's gradient) has
        // nothing to report: every parameter is still finite after training.
        bool reached = false;
        for (const RankRecord& any : run.ranks)
          for (const ShardRecord& shard : any.shards)
            reached = reached || (shard.local.defined() && !at::isfinite(shard.local).all().item<bool>());
        if (!reached)
          return {"nonfinite_reported", true, true,
                  what.str() + ": it reached no trainable parameter (all are finite after training)"};
        return fail(what.str() + ": rank " + std::to_string(r.rank) +
                    " reported no non-finite gradient, yet parameters ended non-finite");
      }
      const std::string group = e->group == "root" ? "" : e->group;
      if (e->step != spec.step || e->detail.value("where", std::string()) != "before_reduce_scatter" ||
          !related(group, spec.module))
        return fail(what.str() + ", but " + describe(r.rank, *e) +
                    (related(group, spec.module) ? "" : ": a group unrelated to " + module));
      verdict = describe(r.rank, *e);
    } else if (e && (e->step < spec.step || (e->step == spec.step && !sc.expert_parallel &&
                                              e->detail.value("where", std::string()) == "before_reduce_scatter"))) {
      // A peer with a non-finite gradient of its own at the fault's step (or before it): the
      // runtime misplaced it. From the next step on every rank's parameters carry it (the optimizer
      // applied the reduced gradient), and with expert parallelism the all-to-all carries the
      // gradient to the peers' experts within the step.
      return fail(what.str() + ", but " + describe(r.rank, *e) + ", a rank the fault was not planned on");
    }
  }
  return {"nonfinite_reported", true, false, what.str() + ": " + verdict};
}

}  // namespace shardfuzz::harness
