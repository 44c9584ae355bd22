// Assembly of the generator's draws into a Scenario.
#include "fuzz/gen/detail/assemble.h"


namespace shardfuzz::fuzz::gen::detail {

namespace {

std::string block_path(std::size_t i) { return "layers." + std::to_string(i); }

std::string sub_path(std::size_t i, std::size_t sub) {
  return sub == kBlock ? block_path(i) : block_path(i) + "." + kSubPaths[sub];
}

// `origin`: the index of the block whose placement names the targets (the head counts as block
// n). Targets outside the model are dropped here; those naming unwrapped modules by repair().
std::optional<std::vector<std::string>> resolve(const PrefetchDraw& draw, std::size_t origin, std::size_t n) {
  if (!draw) return std::nullopt;
  std::vector<std::string> out;
  for (const TargetDraw& t : *draw) {
    switch (t.kind) {
      case TargetDraw::Kind::Self: out.push_back("self"); break;
      case TargetDraw::Kind::Out: out.push_back("out"); break;
      case TargetDraw::Kind::Block: {
        const long j = static_cast<long>(origin) + t.offset;
        if (j >= 0 && j < static_cast<long>(n)) out.push_back(sub_path(static_cast<std::size_t>(j), t.sub));
        break;
      }
    }
  }
  return out;
}

// torchtitan's layout (parallelize.py apply_fsdp, as the recorded traces use it): block i
// prefetches block i+1 and its experts forward, block i-1 and its experts backward; the experts
// get no lists, so they keep the implicit backward path.
void lay_out_torchtitan(harness::Scenario& sc) {
  const std::size_t n = sc.blocks.size();
  auto wrapped = [&](const std::string& path) { return sc.fully_shard.count(path) > 0; };
  auto neighbours = [&](std::size_t j) {
    std::vector<std::string> out;
    for (std::size_t sub : {kBlock, kExperts})
      if (wrapped(sub_path(j, sub))) out.push_back(sub_path(j, sub));
    return out;
  };
  for (std::size_t i = 0; i < n; ++i) {
    auto it = sc.fully_shard.find(block_path(i));
    if (it == sc.fully_shard.end()) continue;
    if (i + 1 < n) {
      auto next = neighbours(i + 1);
      if (!next.empty()) it->second.forward_prefetch = std::move(next);
    }
    if (i > 0) {
      auto prev = neighbours(i - 1);
      if (!prev.empty()) it->second.backward_prefetch = std::move(prev);
    }
  }
}

}  // namespace

bool sub_exists(std::size_t sub, const harness::BlockSpec& b) {
  using Kind = harness::BlockSpec::Kind;
  switch (sub) {
    case kBlock:
    case kAttn: return true;
    case kMoe:
    case kExperts: return b.has_moe();
    case kRouter: return b.has_router();
    case kMlp:
    case kFc1:
    case kFc2: return b.kind == Kind::Mlp;
    case kAttnQ:
    case kAttnK:
    case kAttnV:
    case kAttnO: return b.attention;
    default: return false;
  }
}

harness::Scenario assemble(const ScenarioDraw& d) {
  harness::Scenario sc = d;  // the run-level fields, drawn into the scenario directly

  const std::size_t n = d.block_draws.size();
  for (std::size_t i = 0; i < n; ++i) {
    const BlockDraw& b = d.block_draws[i];
    harness::BlockSpec spec;
    spec.kind = b.kind;
    spec.gated = b.kind == harness::BlockSpec::Kind::Moe && b.gated;
    spec.ac = b.ac;
    spec.ac_wraps_hooks = b.ac != ac::CheckpointMode::None && b.ac_wraps_hooks;
    spec.frozen = b.frozen;
    spec.attention = b.attention;
    spec.norm = b.norm;
    spec.no_grad = b.no_grad;
    for (std::size_t c = 0; c < kLoraCandidates.size() && c < b.lora.size(); ++c)
      if (b.lora[c]) spec.lora.push_back(kLoraCandidates[c]);
    sc.blocks.push_back(spec);
    for (std::size_t sub = 0; sub < kNumSubs; ++sub) {
      if (!b.wrap[sub] || !sub_exists(sub, spec)) continue;
      harness::ShardSpec options = b.options[sub];
      options.forward_prefetch.reset();
      options.backward_prefetch.reset();
      if (d.prefetch == PrefetchStyle::Random) {
        options.forward_prefetch = resolve(b.forward[sub], i, n);
        options.backward_prefetch = resolve(b.backward[sub], i, n);
      }
      sc.fully_shard[sub_path(i, sub)] = std::move(options);
    }
  }

  harness::ShardSpec root = d.root_options;
  root.forward_prefetch.reset();
  root.backward_prefetch.reset();
  sc.fully_shard[""] = root;
  if (d.wrap_out) {
    harness::ShardSpec out = d.out_options;
    out.forward_prefetch.reset();
    out.backward_prefetch.reset();
    if (d.prefetch == PrefetchStyle::Random) {
      out.forward_prefetch = resolve(d.out_forward, n, n);
      out.backward_prefetch = resolve(d.out_backward, n, n);
    }
    sc.fully_shard["out"] = std::move(out);
  }
  if (d.prefetch == PrefetchStyle::Torchtitan) lay_out_torchtitan(sc);
  return sc;
}

}  // namespace shardfuzz::fuzz::gen::detail
