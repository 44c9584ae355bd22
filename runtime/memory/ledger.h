// The ledger: the single source of truth of which runtime-owned buffer holds how many bytes, by
// FSDP group and kind. Entries are RAII: a buffer's entry lives exactly as long as the object that
// owns the buffer, so nothing can be freed without the ledger knowing.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace shardfuzz::memory {

enum class BufferKind : int {
  ShardedParam = 0,       // each rank's padded local shard
  UnshardedParam,         // the all-gather outputs that unsharded params view
  PendingAllGather,       // a flat all-gather output issued but not yet waited on (copied out)
  DeferredAllGather,      // a consumed flat all-gather output parked until the next wait (implicit forward)
  PersistentAllGather,    // world size 1 (torch >= 2.11): the one buffer every unshard wraps
  ShardedPostForward,     // the 1/N clone kept by int reshard_after_forward
  ReduceScatterInput,     // flat gradient input of a reduce-scatter, kept alive until drained
  AllReduceInput,         // HSDP: the reduce-scatter output in reduce_dtype, all-reduced, kept until the
                          // next post_backward (per group until finalize_backward before PR #179443)
  Grad,                   // sharded gradients
  OptimizerState,         // optimizer moments on local shards
  kCount
};
inline constexpr int kBufferKinds = static_cast<int>(BufferKind::kCount);
const char* to_string(BufferKind kind);

using KindTotals = std::array<int64_t, kBufferKinds>;

class Ledger;

// Move-only handle: removes its bytes from the ledger when destroyed or reset.
class LedgerEntry {
 public:
  LedgerEntry() = default;
  LedgerEntry(std::shared_ptr<Ledger> ledger, std::string group, BufferKind kind, int64_t bytes);
  ~LedgerEntry() { reset(); }
  LedgerEntry(LedgerEntry&& other) noexcept { *this = std::move(other); }
  LedgerEntry& operator=(LedgerEntry&& other) noexcept;
  LedgerEntry(const LedgerEntry&) = delete;
  LedgerEntry& operator=(const LedgerEntry&) = delete;

  void reset();
  // Same bytes, new kind (a pending all-gather becoming a deferred one).
  void retag(BufferKind kind);
  explicit operator bool() const { return ledger_ != nullptr; }
  int64_t bytes() const { return bytes_; }
  BufferKind kind() const { return kind_; }

 private:
  std::shared_ptr<Ledger> ledger_;
  std::string group_;
  BufferKind kind_ = BufferKind::ShardedParam;
  int64_t bytes_ = 0;
};

class Ledger : public std::enable_shared_from_this<Ledger> {
 public:
  explicit Ledger(int rank) : rank_(rank) {}
  int rank() const { return rank_; }

  LedgerEntry add(const std::string& group, BufferKind kind, int64_t bytes);

  int64_t total() const;
  KindTotals totals() const;
  int64_t bytes(const std::string& group, BufferKind kind) const;
  int64_t bytes(const std::string& group) const;
  // Every group's bytes by kind (groups holding nothing left out): what a timeline event keeps, so
  // that an oracle can judge each (group, kind) against what should be alive.
  std::map<std::string, KindTotals> by_group() const;

 private:
  friend class LedgerEntry;
  void adjust(const std::string& group, BufferKind kind, int64_t delta);

  int rank_;
  mutable std::mutex mu_;
  std::map<std::string, KindTotals> by_group_;
};

}  // namespace shardfuzz::memory
