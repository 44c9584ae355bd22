// A CPU generator per model (or, shape-only, meta tensors and no draws), and the process's cache of
// recent draws.
#include "runtime/nn/init.h"

#include "runtime/memory/counting_allocator.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

namespace shardfuzz::nn {
namespace {

// A draw is a function of the generator's state before it, its sizes and its scale: the key holds
// all three (the state's bytes, not the seed and a count of draws, since two models of one seed
// whose earlier draws differ in size reach a draw from different states). The generator's state
// after the draw comes with it, so the Init that copies it goes on where the drawing one went on.
using DrawKey = std::tuple<std::string, std::vector<int64_t>, double>;

struct Draw {
  std::once_flag drawn;
  at::Tensor value;        // belongs to no rank
  at::Tensor state_after;  // the generator's state after it
};

// Bounded by seeds (the least recently used out) and by bytes (the oldest draw out). A case's
// ranks, its reference and its blame and shrink reruns all draw from the case's seed, so the draws
// of the few most recent seeds are all that is ever served again; a campaign's earlier cases (a new
// seed each) are never drawn from again. Keeping them to the byte bound held 64 MB of past cases'
// draws in the rank threads' heaps and made every case's buffers land on fresh pages (the standard
// small case: 216-340 page faults against 44, and about 10% of its time, 2026-12-06). A draw larger
// than the byte bound is not kept (nullptr: draw it here).
class DrawCache {
 public:
  static constexpr int64_t kMaxBytes = 64LL << 20;
  static constexpr std::size_t kMaxSeeds = 4;

  std::shared_ptr<Draw> find_or_add(uint64_t seed, const DrawKey& key, int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    use_seed_locked(seed);
    if (auto it = draws_.find(key); it != draws_.end()) return it->second;
    if (bytes > kMaxBytes) return nullptr;
    while (bytes_ + bytes > kMaxBytes && !order_.empty()) drop_locked(order_.begin());
    auto d = std::make_shared<Draw>();
    draws_.emplace(key, d);
    order_.push_back({key, bytes, seed});
    bytes_ += bytes;
    return d;
  }
  std::atomic<int64_t> served{0}, drawn{0};

 private:
  struct Kept {
    DrawKey key;
    int64_t bytes;
    uint64_t seed;
  };
  std::deque<Kept>::iterator drop_locked(std::deque<Kept>::iterator it) {
    draws_.erase(it->key);
    bytes_ -= it->bytes;
    return order_.erase(it);
  }
  // The seed becomes the most recently used; the least recently used beyond kMaxSeeds goes.
  void use_seed_locked(uint64_t seed) {
    if (auto it = std::find(seeds_.begin(), seeds_.end(), seed); it != seeds_.end()) seeds_.erase(it);
    seeds_.push_back(seed);
    if (seeds_.size() <= kMaxSeeds) return;
    drop_seed_locked(seeds_.front());
    seeds_.pop_front();
  }
  void drop_seed_locked(uint64_t seed) {
    for (auto it = order_.begin(); it != order_.end();) it = it->seed == seed ? drop_locked(it) : std::next(it);
  }

  std::mutex mu_;
  std::map<DrawKey, std::shared_ptr<Draw>> draws_;
  std::deque<Kept> order_;     // oldest first
  std::deque<uint64_t> seeds_;  // the seeds whose draws are kept, least recently used first
  int64_t bytes_ = 0;
};

DrawCache& cache() {
  static DrawCache* c = new DrawCache();  // never destroyed: ranks may draw while the process exits
  return *c;
}

}  // namespace

Init::Init(uint64_t seed, bool shape_only, std::optional<uint64_t> kept_as)
    : gen_(at::make_generator<at::CPUGeneratorImpl>(seed)), kept_as_(kept_as.value_or(seed)), shape_only_(shape_only) {}

at::Tensor Init::normal(const std::vector<int64_t>& sizes, double std) {
  if (shape_only_) return at::empty(sizes, at::TensorOptions().dtype(at::kFloat).device(at::kMeta));
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  const auto draw_here = [&] { return at::randn(sizes, gen_, at::TensorOptions().dtype(at::kFloat)) * std; };
  const at::Tensor state = gen_.get_state();
  const DrawKey key{std::string(static_cast<const char*>(state.data_ptr()), state.nbytes()), sizes, std};
  const std::shared_ptr<Draw> d = cache().find_or_add(kept_as_, key, numel * static_cast<int64_t>(sizeof(float)));
  if (!d) return draw_here();
  bool drew = false;
  std::call_once(d->drawn, [&] {
    memory::AllocationRankGuard no_rank(-1);  // the kept draw is no rank's
    d->value = draw_here();
    d->state_after = gen_.get_state();
    drew = true;
  });
  ++(drew ? cache().drawn : cache().served);
  if (!drew) gen_.set_state(d->state_after);
  return d->value.clone();  // the caller's, counted where it is made
}

at::Tensor Init::zeros(const std::vector<int64_t>& sizes) {
  return at::zeros(sizes, at::TensorOptions().dtype(at::kFloat).device(shape_only_ ? at::kMeta : at::kCPU));
}

DrawCacheCounts draw_cache_counts() { return {cache().served.load(), cache().drawn.load()}; }

}  // namespace shardfuzz::nn
