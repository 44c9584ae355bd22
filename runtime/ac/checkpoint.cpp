// The two checkpoint variants; see checkpoint.h for how they differ and why it matters to FSDP.
#include "runtime/ac/checkpoint.h"

#include "runtime/autograd/lambda_node.h"
#include "runtime/autograd/saved_tensor.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <memory>
#include <optional>
#include <stdexcept>
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

// A non-reentrant region: its saves become slots; the first unpack recomputes all of them.
class Region final : public SavedTensorHooks, public std::enable_shared_from_this<Region> {
 public:
  Region(RegionFn fn, at::Tensor input, std::string where)
      : fn_(std::move(fn)), input_(std::move(input)), where_(std::move(where)) {}

  std::optional<std::size_t> pack(const at::Tensor&) override { return packed_++; }

  at::Tensor unpack(std::size_t slot) override {
    if (!recomputed_) recompute();
    if (slot >= slots_.size() || !slots_[slot].defined())
      throw std::runtime_error("checkpoint region '" + where_ + "': saved tensor " + std::to_string(slot) +
                               " unpacked twice or never recomputed");
    return std::exchange(slots_[slot], at::Tensor());  // the op owns it now; the region lets go
  }

 private:
  // Captures the recompute's saves by position; the dead graph keeps its own copies until it dies
  // at the end of recompute().
  struct Capture final : SavedTensorHooks {
    explicit Capture(std::vector<at::Tensor>& slots) : slots(slots) {}
    std::optional<std::size_t> pack(const at::Tensor& t) override {
      slots.push_back(t);
      return std::nullopt;
    }
    at::Tensor unpack(std::size_t) override { throw std::logic_error("capture hooks never unpack"); }
    std::vector<at::Tensor>& slots;
  };

  void recompute() {
    slots_.clear();
    slots_.reserve(packed_);
    {
      SavedTensorHooksGuard capture(std::make_shared<Capture>(slots_));
      torch::autograd::AutoGradMode grad_on(true);
      at::Tensor dead = fn_(detached_like(input_));
      (void)dead;
    }
    recomputed_ = true;
    if (slots_.size() != packed_)
      throw std::runtime_error("checkpoint region '" + where_ + "': recompute saved " +
                               std::to_string(slots_.size()) + " tensors but the forward saved " +
                               std::to_string(packed_) + " (non-deterministic region?)");
  }

  RegionFn fn_;
  at::Tensor input_;
  std::string where_;
  std::size_t packed_ = 0;
  bool recomputed_ = false;
  std::vector<at::Tensor> slots_;
};

at::Tensor non_reentrant(const RegionFn& fn, const at::Tensor& input, const std::string& where) {
  if (!torch::autograd::GradMode::is_enabled()) return fn(input);  // nothing will be unpacked
  auto region = std::make_shared<Region>(fn, input, where);
  SavedTensorHooksGuard guard(region);
  return fn(input);
}

at::Tensor reentrant(const RegionFn& fn, const at::Tensor& input, const std::string& where) {
  at::Tensor out;
  {
    torch::autograd::AutoGradMode grad_off(false);
    out = fn(input);
  }
  return autograd::record_op(
      "CheckpointFunctionBackward(" + where + ")", {input}, out,
      [fn, input, where](const at::Tensor& grad) -> autograd::tensor_list {
        at::Tensor x = detached_like(input);
        at::Tensor recomputed;
        {
          torch::autograd::AutoGradMode grad_on(true);
          recomputed = fn(x);
        }
        if (!recomputed.requires_grad())
          throw std::runtime_error("checkpoint region '" + where + "': recomputed output does not require grad");
        torch::autograd::backward({recomputed}, {grad});
        return {x.requires_grad() ? x.grad() : at::Tensor()};
      });
}

}  // namespace

const char* to_string(CheckpointMode mode) {
  switch (mode) {
    case CheckpointMode::None: return "none";
    case CheckpointMode::NonReentrant: return "non_reentrant";
    case CheckpointMode::Reentrant: return "reentrant";
  }
  return "?";
}

CheckpointMode checkpoint_mode_from_string(const std::string& name) {
  if (name == "none") return CheckpointMode::None;
  if (name == "non_reentrant") return CheckpointMode::NonReentrant;
  if (name == "reentrant") return CheckpointMode::Reentrant;
  throw std::invalid_argument("ac: unknown checkpoint mode '" + name + "' (none, non_reentrant, reentrant)");
}

at::Tensor checkpoint(CheckpointMode mode, const RegionFn& fn, const at::Tensor& input, const std::string& where) {
  switch (mode) {
    case CheckpointMode::None: return fn(input);
    case CheckpointMode::NonReentrant: return non_reentrant(fn, input, where);
    case CheckpointMode::Reentrant: return reentrant(fn, input, where);
  }
  return fn(input);
}

}  // namespace shardfuzz::ac
