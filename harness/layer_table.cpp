// Reading the per-layer table off a timeline.
#include "harness/layer_table.h"

#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace shardfuzz::harness {

std::vector<LayerRow> layer_table(const RankRecord& rank, int step, int blocks) {
  std::vector<LayerRow> rows;
  const auto events = rank.events_of_step(step);
  for (int i = blocks - 1; i >= 0; --i) {
    const std::string group = "layers." + std::to_string(i);
    const memory::TimelineEvent* hit = nullptr;
    for (const auto& e : events)
      if (e.event == "post_backward" && e.group == group) hit = &e;  // the last one (catch-all if any)
    if (!hit)
      throw std::runtime_error("layer table: no post_backward of '" + group + "' on rank " + std::to_string(rank.rank) +
                               " in step " + std::to_string(step));
    LayerRow row;
    row.group = group;
    row.allocated_bytes = hit->allocated_bytes;
    row.ledger_bytes = hit->ledger_total();
    row.grad_bytes = hit->ledger[static_cast<int>(memory::BufferKind::Grad)];
    row.pending_bytes = hit->pending_total_bytes();
    row.stale = hit->stale_all_gathers();
    row.stale_bytes = hit->stale_all_gather_bytes();
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string format_layer_table(const std::vector<LayerRow>& rows, const std::string& title) {
  std::ostringstream os;
  os << title << "\n";
  os << std::left << std::setw(10) << "block" << std::right << std::setw(12) << "alloc B" << std::setw(10) << "Δ alloc"
     << std::setw(12) << "ledger B" << std::setw(10) << "grads B" << std::setw(11) << "pending B" << std::setw(8)
     << "stale" << std::setw(10) << "stale B" << "  stale groups\n";
  int64_t prev = rows.empty() ? 0 : rows.front().allocated_bytes;
  for (const auto& r : rows) {
    std::string names;
    for (const auto& s : r.stale) names += (names.empty() ? "" : ",") + s;
    os << std::left << std::setw(10) << r.group << std::right << std::setw(12) << r.allocated_bytes << std::setw(10)
       << (r.allocated_bytes - prev) << std::setw(12) << r.ledger_bytes << std::setw(10) << r.grad_bytes
       << std::setw(11) << r.pending_bytes << std::setw(8) << r.stale.size() << std::setw(10) << r.stale_bytes << "  "
       << names << "\n";
    prev = r.allocated_bytes;
  }
  return os.str();
}

}  // namespace shardfuzz::harness
