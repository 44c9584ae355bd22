// Ledger bookkeeping; negative balances are a runtime bug and fail loudly.
#include "runtime/memory/ledger.h"

#include <stdexcept>

namespace shardfuzz::memory {

const char* to_string(BufferKind kind) {
  switch (kind) {
    case BufferKind::ShardedParam: return "sharded_param";
    case BufferKind::UnshardedParam: return "unsharded_param";
    case BufferKind::PendingAllGather: return "pending_all_gather";
    case BufferKind::DeferredAllGather: return "deferred_all_gather";
    case BufferKind::PersistentAllGather: return "persistent_all_gather";
    case BufferKind::ShardedPostForward: return "sharded_post_forward";
    case BufferKind::ReduceScatterInput: return "reduce_scatter_input";
    case BufferKind::AllReduceInput: return "all_reduce_input";
    case BufferKind::Grad: return "grad";
    case BufferKind::OptimizerState: return "optimizer_state";
    case BufferKind::kCount: break;
  }
  return "?";
}

LedgerEntry::LedgerEntry(std::shared_ptr<Ledger> ledger, std::string group, BufferKind kind, int64_t bytes)
    : ledger_(std::move(ledger)), group_(std::move(group)), kind_(kind), bytes_(bytes) {
  ledger_->adjust(group_, kind_, bytes_);
}

LedgerEntry& LedgerEntry::operator=(LedgerEntry&& other) noexcept {
  if (this != &other) {
    reset();
    ledger_ = std::move(other.ledger_);
    group_ = std::move(other.group_);
    kind_ = other.kind_;
    bytes_ = other.bytes_;
    other.ledger_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void LedgerEntry::reset() {
  if (ledger_) ledger_->adjust(group_, kind_, -bytes_);
  ledger_ = nullptr;
  bytes_ = 0;
}

void LedgerEntry::retag(BufferKind kind) {
  if (!ledger_ || kind == kind_) return;
  ledger_->adjust(group_, kind_, -bytes_);
  kind_ = kind;
  ledger_->adjust(group_, kind_, bytes_);
}

LedgerEntry Ledger::add(const std::string& group, BufferKind kind, int64_t bytes) {
  if (bytes < 0)
    throw std::invalid_argument("ledger (rank " + std::to_string(rank_) + "): negative size " +
                                std::to_string(bytes) + " for group '" + group + "' kind " + to_string(kind));
  return LedgerEntry(shared_from_this(), group, kind, bytes);
}

void Ledger::adjust(const std::string& group, BufferKind kind, int64_t delta) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& totals = by_group_[group];
  int64_t& slot = totals[static_cast<int>(kind)];
  slot += delta;
  if (slot < 0)
    throw std::logic_error("ledger (rank " + std::to_string(rank_) + "): group '" + group + "' kind " +
                           to_string(kind) + " went negative (" + std::to_string(slot) + " bytes)");
}

int64_t Ledger::total() const {
  int64_t sum = 0;
  for (int64_t v : totals()) sum += v;
  return sum;
}

KindTotals Ledger::totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  KindTotals out{};
  for (const auto& [group, kinds] : by_group_)
    for (int k = 0; k < kBufferKinds; ++k) out[k] += kinds[k];
  return out;
}

int64_t Ledger::bytes(const std::string& group, BufferKind kind) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_group_.find(group);
  return it == by_group_.end() ? 0 : it->second[static_cast<int>(kind)];
}

int64_t Ledger::bytes(const std::string& group) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_group_.find(group);
  if (it == by_group_.end()) return 0;
  int64_t sum = 0;
  for (int64_t v : it->second) sum += v;
  return sum;
}

std::map<std::string, KindTotals> Ledger::by_group() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, KindTotals> out;
  for (const auto& [group, kinds] : by_group_)
    for (int64_t v : kinds)
      if (v != 0) {
        out.emplace(group, kinds);
        break;
      }
  return out;
}

}  // namespace shardfuzz::memory
