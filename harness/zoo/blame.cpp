// Blame by flipping one switch at a time; the row from the zoo table.
#include "harness/zoo/blame.h"

#include "harness/properties/property.h"
#include "harness/backends/threads/threads_backend.h"
#include "harness/zoo/zoo_table.h"
#include "runtime/semantics/profile.h"

namespace shardfuzz::harness::zoo {

namespace {

// Whether some row of the zoo table is `row` through `switch_name`.
bool can_name(const std::string& switch_name, const std::string& row) {
  for (const ZooRow& r : zoo_table())
    if (switch_name == r.switch_name && row == r.row) return true;
  return false;
}

}  // namespace

std::vector<Blame> blame(const Scenario& sc, const RunRecord* failing_run, const std::string& only_row) {
  std::vector<const semantics::Profile::Switch*> flips;
  for (const semantics::Profile::Switch* s : sc.profile.deviations_from_strict())
    if (only_row.empty() || can_name(s->name, only_row)) flips.push_back(s);
  if (flips.empty()) return {};
  RunRecord own;
  if (!failing_run) {
    own = run_threads(sc);
    if (!any_failure(check_properties(sc, own))) return {};
  }
  const RunRecord& failing = failing_run ? *failing_run : own;
  std::vector<Blame> out;
  for (const semantics::Profile::Switch* s : flips) {
    const ZooRow* row = row_for(s->name, sc, failing);
    if (!only_row.empty() && (!row || row->row != only_row)) continue;  // its flip could not name the row
    Scenario flipped = sc;
    flipped.profile = sc.profile.without(*s);
    const RunRecord run = run_threads(flipped);
    if (any_failure(check_properties(flipped, run))) continue;
    out.push_back({s->name, row ? row->row : "?", row && row->injected, row ? row->upstream : ""});
  }
  return out;
}

std::string describe(const std::vector<Blame>& blames) {
  if (blames.empty()) return "unattributed";
  std::string out;
  for (const auto& b : blames) {
    if (!out.empty()) out += ", ";
    out += "row " + b.row + " (" + b.switch_name + (b.injected ? ", injected" : "") + ")";
  }
  return out;
}

}  // namespace shardfuzz::harness::zoo
