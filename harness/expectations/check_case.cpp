// Judging a native run against an upstream test's expectations.
#include "harness/expectations/check_case.h"

#include "harness/backends/threads/threads_backend.h"
#include "harness/conformance/replay.h"
#include "harness/properties/property.h"

#include <algorithm>
#include <sstream>

namespace shardfuzz::harness::expectations {
namespace {

using memory::Event;

std::string quoted(const std::string& module) { return module.empty() ? "\"\" (root)" : module; }

void compare_events(const ExpectedEvents& want, const RankRecord& rank, const std::vector<std::string>& record,
                    std::vector<Mismatch>& out) {
  const std::vector<memory::TimelineEvent> native = phase_events(rank, want.where);
  const std::vector<ProjectedEvent> got = upstream_view(native, record);
  const std::size_t n = std::max(want.events.size(), got.size());
  for (std::size_t i = 0; i < n; ++i) {
    const bool have_want = i < want.events.size(), have_got = i < got.size();
    if (have_want && have_got && want.events[i] == got[i].event) continue;
    Mismatch m{rank.rank, want.where.label(), "", static_cast<int>(i), "(nothing)", "(nothing)"};
    if (have_want) m.expected = want.events[i].describe(), m.module = want.events[i].module;
    if (have_got) {
      m.got = got[i].event.describe() + " [native: " + describe(native[got[i].native_index]) + "]";
      if (!have_want) m.module = got[i].event.module;
    }
    out.push_back(std::move(m));
    return;  // the first divergence: later events only shift
  }
}

void compare_counts(const ExpectedCounts& want, const RankRecord& rank, std::vector<Mismatch>& out) {
  int all_gathers = 0, reduce_scatters = 0;
  for (const auto& e : phase_events(rank, want.where)) {
    all_gathers += e.event == Event::AllGatherIssued;
    reduce_scatters += e.event == Event::PostBackward;
  }
  auto check = [&](const char* what, int expected, int got) {
    if (expected >= 0 && expected != got)
      out.push_back({rank.rank, want.where.label(), "", -1, std::to_string(expected) + " " + what,
                     std::to_string(got) + " " + what});
  };
  check("all-gathers", want.all_gathers, all_gathers);
  check("reduce-scatters", want.reduce_scatters, reduce_scatters);
}

void compare_unsharded(const ExpectedUnsharded& want, const RankRecord& rank, std::vector<Mismatch>& out) {
  const memory::TimelineEvent* end = phase_end(rank, want.where);
  std::vector<std::string> got;
  if (end)
    for (const auto& g : end->unsharded) got.push_back(upstream_module(g));
  std::sort(got.begin(), got.end());
  if (end && got == want.modules) return;
  auto list = [](const std::vector<std::string>& v) {
    std::string s = "unsharded [";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + quoted(v[i]);
    return s + "]";
  };
  out.push_back({rank.rank, want.where.label(), "", -1, list(want.modules), end ? list(got) : "(phase never ended)"});
}

void compare_properties(const ExpectationCase& c, const RunRecord& run, std::vector<Mismatch>& out) {
  if (c.properties.empty()) return;
  for (const Verdict& v : check_properties(c.scenario, run)) {
    if (std::find(c.properties.begin(), c.properties.end(), v.property) == c.properties.end()) continue;
    if (!v.ok || v.skipped)
      out.push_back({-1, "property", "", -1, v.property + " holds", (v.skipped ? "skipped: " : "failed: ") + v.message});
  }
}

MemoryMeasurement measure(const MemoryBound& bound, const RunRecord& run, const ModelNumels& numels,
                          std::vector<Mismatch>& out) {
  MemoryMeasurement m{bound.where.label(), 0, -1, formula_bytes(bound.formula, numels), 0, bound.max_ratio};
  for (const auto& rank : run.ranks)
    if (const memory::TimelineEvent* end = phase_end(rank, bound.where); end && end->peak_bytes > m.measured)
      m.measured = end->peak_bytes, m.rank = rank.rank;
  m.ratio = static_cast<double>(m.measured) / static_cast<double>(m.formula);
  if (m.measured < 0 || m.ratio > bound.max_ratio) {
    std::ostringstream want, got;
    want << "peak <= " << bound.max_ratio << " x " << m.formula << " bytes (upstream's formula)";
    got << m.measured << " bytes (" << m.ratio << " x)";
    out.push_back({m.rank, m.where, "", -1, want.str(), got.str()});
  }
  return m;
}

}  // namespace

std::string Mismatch::message() const {
  std::ostringstream os;
  if (rank >= 0) os << "rank " << rank << ", ";
  os << where;
  if (index >= 0) os << ", event " << index;
  if (!module.empty() || index >= 0) os << ", module " << quoted(module);
  os << ": expected " << expected << "\n    got " << got;
  return os.str();
}

CaseResult check_run(const ExpectationCase& c, const RunRecord& run) {
  CaseResult r;
  if (!run.ok()) {
    r.mismatches.push_back({-1, "run", "", -1, "a completed run", "native run failed: " + run.error});
    return r;
  }
  for (const auto& rank : run.ranks) {
    for (const auto& e : c.events) compare_events(e, rank, c.record, r.mismatches);
    for (const auto& n : c.counts) compare_counts(n, rank, r.mismatches);
    for (const auto& u : c.unsharded) compare_unsharded(u, rank, r.mismatches);
  }
  compare_properties(c, run, r.mismatches);
  for (const auto& bound : c.memory)
    r.memory.push_back(measure(bound, run, model_numels(run, bound.formula.block_module), r.mismatches));
  return r;
}

CaseResult check_case(const ExpectationCase& c) {
  RunOptions options;
  options.reference = std::find(c.properties.begin(), c.properties.end(), "parity_with_reference") != c.properties.end();
  return check_run(c, run_threads(c.scenario, options));
}

}  // namespace shardfuzz::harness::expectations
