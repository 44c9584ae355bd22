// Reading the per-layer table off a timeline.
#include "harness/report/layer_table.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace shardfuzz::harness {
namespace {

using memory::Event;

LayerRow row_of(const memory::TimelineEvent& e) {
  LayerRow row;
  row.group = e.group;
  row.allocated_bytes = e.allocated_bytes;
  row.ledger_bytes = e.ledger_total();
  row.grad_bytes = e.ledger[static_cast<int>(memory::BufferKind::Grad)];
  row.pending_bytes = e.pending_total_bytes();
  row.stale = e.stale_all_gathers();
  row.stale_bytes = e.stale_all_gather_bytes();
  return row;
}

}  // namespace

std::vector<LayerRow> group_table(const RankRecord& rank, int step) {
  std::vector<LayerRow> rows;
  for (const auto& e : rank.events_of_step(step))
    if (e.event == Event::PostBackward) rows.push_back(row_of(e));
  return rows;
}

std::vector<LayerRow> layer_table(const RankRecord& rank, int step, int blocks) {
  std::vector<LayerRow> rows;
  const auto events = rank.events_of_step(step);
  for (int i = blocks - 1; i >= 0; --i) {
    const std::string group = "layers." + std::to_string(i);
    const memory::TimelineEvent* hit = nullptr;
    for (const auto& e : events)
      if (e.event == Event::PostBackward && e.group == group) hit = &e;  // the last one (catch-all if any)
    if (!hit)
      throw std::runtime_error("layer table: no post_backward of '" + group + "' on rank " + std::to_string(rank.rank) +
                               " in step " + std::to_string(step));
    rows.push_back(row_of(*hit));
  }
  return rows;
}

std::string format_layer_table(const std::vector<LayerRow>& rows, const std::string& title) {
  int name_width = 8;
  for (const auto& r : rows) name_width = std::max<int>(name_width, static_cast<int>(r.group.size()) + 2);
  std::ostringstream os;
  os << title << "\n";
  os << std::left << std::setw(name_width) << "group" << std::right << std::setw(12) << "alloc B" << std::setw(10)
     << "d alloc" << std::setw(12) << "ledger B" << std::setw(10) << "grads B" << std::setw(11) << "pending B"
     << std::setw(8) << "stale" << std::setw(10) << "stale B" << "  stale groups\n";
  int64_t prev = rows.empty() ? 0 : rows.front().allocated_bytes;
  for (const auto& r : rows) {
    std::string names;
    for (const auto& s : r.stale) names += (names.empty() ? "" : ",") + s;
    os << std::left << std::setw(name_width) << r.group << std::right << std::setw(12) << r.allocated_bytes
       << std::setw(10) << (r.allocated_bytes - prev) << std::setw(12) << r.ledger_bytes << std::setw(10)
       << r.grad_bytes << std::setw(11) << r.pending_bytes << std::setw(8) << r.stale.size() << std::setw(10)
       << r.stale_bytes << "  " << names << "\n";
    prev = r.allocated_bytes;
  }
  return os.str();
}

}  // namespace shardfuzz::harness
