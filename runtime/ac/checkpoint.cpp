// The checkpoint variants; see checkpoint.h for how they differ and why it matters to FSDP.
#include "runtime/ac/checkpoint.h"

#include "runtime/autograd/lambda_node.h"
#include "runtime/autograd/saved_tensor.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace shardfuzz::ac {
namespace {

using autograd::SavedTensorHooks;
using autograd::SavedTensorHooksGuard;

at::Tensor detached_like(const at::Tensor& input) {
  at::Tensor x = input.detach();
  x.set_requires_grad(input.requires_grad());
  return x;
}

thread_local CheckpointCounters t_counters;
thread_local std::shared_ptr<const RegionObserver> t_observer;

void report(const std::shared_ptr<const RegionObserver>& observer, const RegionReport& r) {
  if (observer && *observer) (*observer)(r);
}

// Pass-through hooks that only count, for a reentrant region (it saves nothing of its own: its
// forward runs without grad and its recompute's graph is back-propagated for real).
struct Counting final : SavedTensorHooks {
  std::optional<std::size_t> pack(const at::Tensor&) override {
    ++saves;
    return std::nullopt;
  }
  at::Tensor unpack(std::size_t) override { throw std::logic_error("counting hooks never unpack"); }
  at::Tensor op_output(autograd::OpKind kind, const std::function<at::Tensor()>& compute) override {
    if (kind == autograd::OpKind::MatmulLike) ++matmul_like_ran;
    return compute();
  }
  std::size_t saves = 0;
  std::size_t matmul_like_ran = 0;
};

// Runs fn(input) under counting hooks and reports the pass.
at::Tensor counted(const RegionFn& fn, const at::Tensor& input, RegionReport r,
                   const std::shared_ptr<const RegionObserver>& observer) {
  auto counting = std::make_shared<Counting>();
  at::Tensor out;
  {
    SavedTensorHooksGuard guard(counting);
    out = fn(input);
  }
  // A reentrant forward runs without grad: whatever its ops offered to save, backward keeps nothing.
  r.saves = r.pass == RegionReport::Pass::Forward ? 0 : counting->saves;
  r.matmul_like_ran = counting->matmul_like_ran;
  report(observer, r);
  return out;
}

// A non-reentrant region: its saves become slots; the first unpack recomputes all of them. A
// selective region also keeps its matmul-like outputs, in forward order, for the recompute.
class Region final : public SavedTensorHooks, public std::enable_shared_from_this<Region> {
 public:
  Region(RegionFn fn, at::Tensor input, std::string where, bool selective)
      : fn_(std::move(fn)), input_(std::move(input)), where_(std::move(where)), selective_(selective),
        observer_(t_observer) {}

  // The forward pass's report, once fn has run under this region's hooks.
  void report_forward() const {
    RegionReport r = base_report(RegionReport::Pass::Forward);
    r.saves = packed_;
    r.matmul_like_ran = matmul_like_ran_;
    r.outputs_kept = kept_.size();
    for (const at::Tensor& t : kept_) r.bytes_kept += static_cast<int64_t>(t.nbytes());
    report(observer_, r);
  }

  std::optional<std::size_t> pack(const at::Tensor&) override {
    ++t_counters.saves_dropped;
    return packed_++;
  }

  at::Tensor unpack(std::size_t slot) override {
    if (!recomputed_) recompute();
    if (slot >= slots_.size() || !slots_[slot].defined())
      throw std::runtime_error("checkpoint region '" + where_ + "': saved tensor " + std::to_string(slot) +
                               " unpacked twice or never recomputed");
    return std::exchange(slots_[slot], at::Tensor());  // the op owns it now; the region lets go
  }

  at::Tensor op_output(autograd::OpKind kind, const std::function<at::Tensor()>& compute) override {
    at::Tensor out = compute();
    if (kind == autograd::OpKind::MatmulLike) ++matmul_like_ran_;
    if (selective_ && kind == autograd::OpKind::MatmulLike) {
      kept_.push_back(out.detach());  // detached: the output's node must not be owned by its region
      ++t_counters.outputs_kept;
      t_counters.bytes_kept += out.nbytes();
    }
    return out;
  }

 private:
  // Captures the recompute's saves by position (every save of the forward had a slot, so position
  // i of the recompute is slot i); the dead graph keeps its own copies until it dies at the end of
  // recompute(). A selective region's kept outputs are handed back by position too.
  struct Capture final : SavedTensorHooks {
    Capture(std::vector<at::Tensor>& slots, std::vector<at::Tensor>* kept) : slots(slots), kept(kept) {}
    std::optional<std::size_t> pack(const at::Tensor& t) override {
      slots.push_back(t);
      return std::nullopt;
    }
    at::Tensor unpack(std::size_t) override { throw std::logic_error("capture hooks never unpack"); }
    at::Tensor op_output(autograd::OpKind kind, const std::function<at::Tensor()>& compute) override {
      if (kind != autograd::OpKind::MatmulLike) return compute();
      if (!kept || next_kept >= kept->size()) {
        if (kept) ++next_kept;  // counted, reported after the recompute
        ++matmul_like_ran;
        return compute();
      }
      ++t_counters.outputs_reused;
      ++reused;
      return std::exchange((*kept)[next_kept++], at::Tensor());
    }
    std::vector<at::Tensor>& slots;
    std::vector<at::Tensor>* kept;
    std::size_t next_kept = 0;
    std::size_t matmul_like_ran = 0;
    std::size_t reused = 0;
  };

  RegionReport base_report(RegionReport::Pass pass) const {
    RegionReport r;
    r.pass = pass;
    r.where = where_;
    r.mode = selective_ ? CheckpointMode::SelectiveOps : CheckpointMode::NonReentrant;
    return r;
  }

  void recompute() {
    slots_.clear();
    slots_.reserve(packed_);
    ++t_counters.recomputes;
    std::size_t kept_used = 0;
    RegionReport r = base_report(RegionReport::Pass::Recompute);
    {
      auto capture = std::make_shared<Capture>(slots_, selective_ ? &kept_ : nullptr);
      SavedTensorHooksGuard guard(capture);
      torch::autograd::AutoGradMode grad_on(true);
      at::Tensor dead = fn_(detached_like(input_));
      (void)dead;
      kept_used = capture->next_kept;
      r.matmul_like_ran = capture->matmul_like_ran;
      r.outputs_reused = capture->reused;
    }
    r.saves = slots_.size();
    report(observer_, r);
    recomputed_ = true;
    const std::size_t kept = kept_.size();
    kept_.clear();
    if (slots_.size() != packed_)
      throw std::runtime_error("checkpoint region '" + where_ + "': recompute saved " +
                               std::to_string(slots_.size()) + " tensors but the forward saved " +
                               std::to_string(packed_) + " (non-deterministic region?)");
    if (kept_used != kept)
      throw std::runtime_error("checkpoint region '" + where_ + "' (selective_ops): recompute ran " +
                               std::to_string(kept_used) + " matmul-like ops but the forward kept " +
                               std::to_string(kept) + " outputs (non-deterministic region?)");
  }

  RegionFn fn_;
  at::Tensor input_;
  std::string where_;
  bool selective_;
  std::size_t packed_ = 0;
  bool recomputed_ = false;
  std::vector<at::Tensor> slots_;
  std::vector<at::Tensor> kept_;  // selective: matmul-like outputs of the forward, until recompute
  std::size_t matmul_like_ran_ = 0;  // in forward
  std::shared_ptr<const RegionObserver> observer_;
};

at::Tensor non_reentrant(const RegionFn& fn, const at::Tensor& input, const std::string& where, bool selective) {
  if (!torch::autograd::GradMode::is_enabled()) return fn(input);  // nothing will be unpacked
  auto region = std::make_shared<Region>(fn, input, where, selective);
  at::Tensor out;
  {
    SavedTensorHooksGuard guard(region);
    out = fn(input);
  }
  region->report_forward();
  return out;
}

at::Tensor reentrant(const RegionFn& fn, const at::Tensor& input, const std::string& where, bool needs_input_grad) {
  std::shared_ptr<const RegionObserver> observer = t_observer;
  RegionReport r;
  r.where = where;
  r.mode = CheckpointMode::Reentrant;
  const bool with_grad = torch::autograd::GradMode::is_enabled();  // under no_grad: no region, nothing to report
  at::Tensor out;
  {
    torch::autograd::AutoGradMode grad_off(false);
    out = with_grad ? counted(fn, input, r, observer) : fn(input);
  }
  // Upstream's CheckpointFunction is an autograd.Function over its tensor arguments only: with an
  // input that needs no grad its output needs none, and the region's parameters get no gradient.
  // Otherwise the node hangs off a stand-in leaf that needs grad (HF's enable_input_require_grads).
  at::Tensor anchor = input;
  if (!needs_input_grad && torch::autograd::GradMode::is_enabled() && !input.requires_grad()) {
    anchor = input.detach();
    anchor.set_requires_grad(true);
  }
  return autograd::record_op(
      "CheckpointFunctionBackward(" + where + ")", {anchor}, out,
      [fn, input, r, observer](const at::Tensor& grad) -> autograd::tensor_list {
        at::Tensor x = detached_like(input);
        at::Tensor recomputed;
        {
          torch::autograd::AutoGradMode grad_on(true);
          RegionReport again = r;
          again.pass = RegionReport::Pass::Recompute;
          recomputed = counted(fn, x, again, observer);
        }
        const std::string& where = r.where;
        if (!recomputed.requires_grad()) {
          if (!x.requires_grad()) return {at::Tensor()};  // a stand-in input over a region with no trainable part
          throw std::runtime_error("checkpoint region '" + where + "': recomputed output does not require grad");
        }
        torch::autograd::backward({recomputed}, {grad});
        return {x.requires_grad() ? x.grad() : at::Tensor()};
      });
}

}  // namespace

CheckpointCounters& checkpoint_counters() { return t_counters; }

RegionObserverGuard::RegionObserverGuard(RegionObserver observer)
    : previous_(std::exchange(t_observer, std::make_shared<const RegionObserver>(std::move(observer)))) {}
RegionObserverGuard::~RegionObserverGuard() { t_observer = std::move(previous_); }

const char* to_string(CheckpointMode mode) {
  for (const auto& [m, name] : kCheckpointModeNames)
    if (m == mode) return name;
  return "?";
}

CheckpointMode checkpoint_mode_from_string(const std::string& name) {
  std::string known;
  for (const auto& [m, n] : kCheckpointModeNames) {
    if (name == n) return m;
    known += (known.empty() ? "" : ", ") + std::string(n);
  }
  throw std::invalid_argument("ac: unknown checkpoint mode '" + name + "' (" + known + ")");
}

at::Tensor checkpoint(CheckpointMode mode, const RegionFn& fn, const at::Tensor& input, const std::string& where,
                      bool reentrant_needs_input_grad) {
  switch (mode) {
    case CheckpointMode::None: return fn(input);
    case CheckpointMode::NonReentrant: return non_reentrant(fn, input, where, /*selective=*/false);
    case CheckpointMode::Reentrant: return reentrant(fn, input, where, reentrant_needs_input_grad);
    case CheckpointMode::SelectiveOps: return non_reentrant(fn, input, where, /*selective=*/true);
  }
  return fn(input);
}

}  // namespace shardfuzz::ac
