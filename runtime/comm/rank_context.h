// Which rank the calling thread runs for: ThreadWorld sets it so that per-rank bookkeeping (the
// memory probe's allocation tags) can attribute work done on a rank thread without plumbing.
#pragma once

namespace shardfuzz::comm {

// The global rank of the calling ThreadWorld rank thread, or -1 on any other thread.
int current_thread_rank();

// Marks the calling thread as running `rank` for the guard's lifetime (restores the previous
// value after), so nested or reused threads never keep a stale tag.
class RankScope {
 public:
  explicit RankScope(int rank);
  ~RankScope();
  RankScope(const RankScope&) = delete;
  RankScope& operator=(const RankScope&) = delete;

 private:
  int previous_;
};

}  // namespace shardfuzz::comm
