// Thread-local rank tag behind current_thread_rank().
#include "runtime/comm/rank_context.h"

namespace shardfuzz::comm {
namespace {
thread_local int t_rank = -1;
}  // namespace

int current_thread_rank() { return t_rank; }

RankScope::RankScope(int rank) : previous_(t_rank) { t_rank = rank; }
RankScope::~RankScope() { t_rank = previous_; }

}  // namespace shardfuzz::comm
