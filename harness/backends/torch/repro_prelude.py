# --- shardfuzz torch prelude: the model zoo in torch.nn, the FSDP2 event recorder, the run loop ---
# The modules mirror shardfuzz's runtime/nn (same parameter names and shapes, so every all-gather
# and reduce-scatter has the same size); values are torch's own draws.
import argparse, inspect, json, math, os, sys, textwrap

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

try:
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
    import torch.distributed.fsdp._fully_shard._fsdp_param_group as _pgm
    _PG = _pgm.FSDPParamGroup
    for _attr in ("pre_forward", "post_forward", "pre_backward", "post_backward", "reshard", "unshard",
                  "finalize_backward", "_prefetch_unshard"):
        if not hasattr(_PG, _attr):
            raise ImportError("FSDPParamGroup." + _attr)
except ImportError as e:  # the internals this script reads moved
    sys.exit(f"shardfuzz repro: torch {torch.__version__} lacks an FSDP2 internal this script reads ({e}); "
             "it was written against torch 2.9-2.11")


class Linear(nn.Module):
    def __init__(self, d_in, d_out, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(d_out, d_in) / math.sqrt(d_in))
        self.bias = nn.Parameter(torch.randn(d_out) * 0.02) if bias else None
        self.lora_scale = 0.0

    def enable_lora(self, rank, alpha):  # base frozen, adapters trainable, B non-zero
        self.weight.requires_grad_(False)
        if self.bias is not None:
            self.bias.requires_grad_(False)
        self.lora_a = nn.Parameter(torch.randn(rank, self.weight.shape[1]) / math.sqrt(self.weight.shape[1]))
        self.lora_b = nn.Parameter(torch.randn(self.weight.shape[0], rank) * 0.02)
        self.lora_scale = alpha / rank

    def forward(self, x):
        y = F.linear(x, self.weight, self.bias)
        if self.lora_scale:
            y = y + F.linear(F.linear(x, self.lora_a), self.lora_b) * self.lora_scale
        return y


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim) * 0.02 + 1.0)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (Linear(dim, dim, bias=False) for _ in range(4))

    def forward(self, x):
        t, d = x.shape[0], x.shape[1] // self.heads
        split = lambda y: y.reshape(t, self.heads, d).transpose(0, 1)
        s = split(self.q(x)) @ split(self.k(x)).transpose(1, 2) / math.sqrt(d)
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
        return self.o((s.softmax(-1) @ split(self.v(x))).transpose(0, 1).reshape(t, -1))


class Experts(nn.Module):  # dense: every token through every expert
    def __init__(self, dim, hidden, experts):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(experts, dim, hidden) / math.sqrt(dim))
        self.w2 = nn.Parameter(torch.randn(experts, hidden, dim) / math.sqrt(hidden))

    def forward(self, x):
        return (torch.relu(x.unsqueeze(0) @ self.w1) @ self.w2).sum(0) / self.w1.shape[0]


class MoE(nn.Module):  # the conformance traces' MoE, gated by router scores
    def __init__(self, dim, hidden, experts, gated):
        super().__init__()
        self.experts = Experts(dim, hidden, experts)
        self.router = Linear(dim, experts) if gated else None

    def forward(self, x):
        y = self.experts(x)
        return y if self.router is None else y * torch.sigmoid(self.router(x)).mean(-1, keepdim=True)


class RoutedExperts(nn.Module):  # grouped-mm semantics: every expert runs, even with zero rows
    def __init__(self, dim, hidden, experts):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(experts, dim, hidden) / math.sqrt(dim))
        self.w2 = nn.Parameter(torch.randn(experts, hidden, dim) / math.sqrt(hidden))

    def forward(self, x, counts):
        outs, start = [], 0
        for e, n in enumerate(counts):
            rows = x[start:start + n]
            outs.append(torch.relu(rows @ self.w1[e]) @ self.w2[e])
            start += n
        return torch.cat(outs)


class RoutedMoE(nn.Module):  # softmax router, top-k without renormalisation (torchtitan's default)
    def __init__(self, dim, hidden, experts, top_k, ep=None):
        super().__init__()
        self.top_k, self.num_experts, self.ep = top_k, experts, ep
        ep_size = dist.get_world_size(ep) if ep is not None else 1
        # Expert parallel: this rank holds experts [ep_rank * E/ep, (ep_rank + 1) * E/ep).
        self.experts = RoutedExperts(dim, hidden, experts // ep_size)  # experts first, as shardfuzz registers them
        self.router = Linear(dim, experts, bias=False)

    def forward(self, x):
        probs = self.router(x).softmax(-1)
        chosen = probs.detach().topk(self.top_k, dim=1).indices
        flat = chosen.reshape(-1)
        order = flat.argsort(stable=True)
        token = order // self.top_k
        counts = torch.bincount(flat, minlength=probs.shape[1])
        routed = x[token]
        if self.ep is None or dist.get_world_size(self.ep) == 1:
            y = self.experts(routed, counts.tolist())
        else:
            y = self.dispatch_and_combine(routed, counts)
        y = y * probs.gather(1, chosen).reshape(-1)[order].unsqueeze(1)
        return torch.zeros_like(x).index_add(0, token, y)

    def dispatch_and_combine(self, routed, counts):
        """All-to-all to the ranks holding each expert, the local experts, all-to-all back (as the
        native RoutedMoE::run_experts; the FSDP hooks of `experts` fire between the two)."""
        from torch.distributed._functional_collectives import all_to_all_single_autograd
        n = dist.get_world_size(self.ep)
        local = self.num_experts // n
        recv = torch.empty_like(counts)  # recv[i * local + e]: rows rank i sends to local expert e
        dist.all_to_all_single(recv, counts, group=self.ep)
        send, recv = counts.tolist(), recv.tolist()
        send_splits = [sum(send[i * local:(i + 1) * local]) for i in range(n)]
        recv_splits = [sum(recv[i * local:(i + 1) * local]) for i in range(n)]
        received = all_to_all_single_autograd(routed, recv_splits, send_splits, self.ep)
        starts = [sum(recv[:j]) for j in range(n * local)]
        regroup = [starts[i * local + e] + r for e in range(local) for i in range(n) for r in range(recv[i * local + e])]
        regroup = torch.tensor(regroup, dtype=torch.long, device=routed.device)
        per_expert = [sum(recv[i * local + e] for i in range(n)) for e in range(local)]
        out = self.experts(received[regroup], per_expert)
        by_source = torch.empty_like(out).index_copy(0, regroup, out)
        return all_to_all_single_autograd(by_source, send_splits, recv_splits, self.ep)


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1, self.fc2 = Linear(dim, hidden), Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, hidden, experts, heads, top_k, kind, gated, attention, norm, no_grad, ep=None):
        super().__init__()
        self.no_grad = no_grad
        self.attn = Attention(dim, heads) if attention else Linear(dim, dim)
        self.norm1, self.norm2 = (RMSNorm(dim), RMSNorm(dim)) if norm else (None, None)
        if kind == "mlp":
            self.mlp = Mlp(dim, hidden)
        elif kind == "routed_moe":
            self.moe = RoutedMoE(dim, hidden, experts, top_k, ep)
        else:
            self.moe = MoE(dim, hidden, experts, gated)

    def forward(self, x):  # a no_grad block is called under no_grad by Model (hooks and AC included)
        ffn = self.mlp if hasattr(self, "mlp") else self.moe
        h = x + self.attn(self.norm1(x) if self.norm1 is not None else x)
        return h + ffn(self.norm2(h) if self.norm2 is not None else h)


class Model(nn.Module):
    def __init__(self, dim, vocab, final_norm, blocks):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim) if vocab else None
        self.layers = nn.ModuleList(blocks)
        self.no_grad = [b.no_grad for b in blocks]  # kept here: the blocks get wrapped later
        self.norm = RMSNorm(dim) if final_norm else None
        self.out = Linear(dim, dim)

    def forward(self, x):
        if self.embed is not None:
            x = self.embed(x)
        for layer, no_grad in zip(self.layers, self.no_grad):
            if no_grad:
                with torch.no_grad():
                    x = layer(x)
            else:
                x = layer(x)
        return self.out(self.norm(x) if self.norm is not None else x)


def checkpointed(module, mode):
    if mode == "reentrant":
        return checkpoint_wrapper(module, checkpoint_impl=CheckpointImpl.REENTRANT)
    if mode == "selective_ops":  # save matmul outputs, recompute the rest
        from functools import partial
        from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
        saved = {torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default}
        policy = lambda ctx, op, *a, **k: (CheckpointPolicy.MUST_SAVE if op in saved else CheckpointPolicy.PREFER_RECOMPUTE)
        return checkpoint_wrapper(module, checkpoint_impl=CheckpointImpl.NO_REENTRANT,
                                  context_fn=partial(create_selective_checkpoint_contexts, policy))
    return checkpoint_wrapper(module, checkpoint_impl=CheckpointImpl.NO_REENTRANT)


def fsdp(module):  # the FSDPModule behind a checkpoint wrapper put around it (HF's order)
    from torch.distributed.fsdp import FSDPModule
    return module if isinstance(module, FSDPModule) else module._checkpoint_wrapped_module


def upcast_trainable(model):  # accelerate's preparation: float32 masters for what requires grad
    for p in model.parameters():
        if p.requires_grad:
            p.data = p.data.float()


# --- the recorder: one event per FSDPParamGroup transition, with the ledger after it -------------
TIMELINE, GROUPS, STATE = [], [], {"step": 0, "current": None, "rank": 0, "device": "cpu"}


def _unwrapped(fqn):  # the module path without checkpoint wrappers, as the scenario names it
    return fqn.replace("._checkpoint_wrapped_module", "").replace("_checkpoint_wrapped_module.", "")


def _name(group):
    return _unwrapped(group._module_fqn or "root")


def _record(event, group_name, detail=None, category="fsdp"):
    pending = {_name(g): sum(t.numel() * t.element_size() for t in [g._all_gather_result.all_gather_output])
               for g in GROUPS if g._all_gather_result is not None}
    from torch.distributed.fsdp._fully_shard._fsdp_common import TrainingState
    # HSDP's reduce output kept per group (AllReduceState; moved to the comm context by PR #179443).
    kept = {}
    for g in GROUPS:
        buffer = getattr(getattr(g, "_all_reduce_state", None), "all_reduce_input", None)
        # Only a buffer of its own: in the parameters' dtype it is the sharded gradient itself.
        if buffer is not None and buffer.dtype != (getattr(g, "_orig_dtype", None) or buffer.dtype):
            kept[_name(g)] = buffer.numel() * buffer.element_size()
    e = {"event": event, "group": group_name, "rank": STATE["rank"], "step": STATE["step"],
         "pending_all_gather": sorted(pending), "pending_all_gather_bytes": pending, "all_reduce_input_bytes": kept,
         "unsharded": sorted(_name(g) for g in GROUPS if g.is_unsharded),
         "finished_backward": sorted(_name(g) for g in GROUPS if g._training_state == TrainingState.POST_BACKWARD),
         "allocated_bytes": torch.cuda.memory_allocated() if STATE["device"] == "cuda" else None}
    if detail is not None:
        e["detail"] = detail
    if category != "fsdp":  # step phases (forward_end, backward_end, step_end, ...), as the native timeline
        e["category"] = category
    TIMELINE.append(e)


# The shipped methods, stashed once per process on the class itself, so that several reproducers
# run in one process (the batch runner) each wrap the originals, not each other's wrappers.
if not hasattr(_PG, "_shardfuzz_originals"):
    _PG._shardfuzz_originals = {n: _PG.__dict__[n] for n in (
        "pre_forward", "post_forward", "pre_backward", "post_backward", "reshard", "unshard",
        "finalize_backward", "_prefetch_unshard")}


def _wrap(name, before=None, after=None):
    original = _PG.__dict__[name]

    def wrapped(self, *args, **kwargs):
        state = before(self) if before else None
        result = original(self, *args, **kwargs)
        if after:
            after(self, state)
        return result
    setattr(_PG, name, wrapped)


def _in_backward():
    return torch._C._current_graph_task_id() != -1


def restore_shipped_methods():  # undo any earlier reproducer's wrappers (the batch runner's process)
    for name, original in _PG._shardfuzz_originals.items():
        setattr(_PG, name, original)


def install_recorder(emulate_pre_164009):
    restore_shipped_methods()
    if emulate_pre_164009:
        # torch <= 2.9: post_forward reshards and records into post_forward_order even inside the
        # autograd engine (AC recompute). The installed post_forward is recompiled from its own
        # source with PR #164009's is_bw() guard removed; nothing else changes.
        source = textwrap.dedent(inspect.getsource(_PG.post_forward))
        if "not is_bw()" not in source:
            sys.exit("shardfuzz repro: this torch's post_forward has no is_bw() guard to remove; "
                     "it already behaves as torch <= 2.9")
        namespace = {}
        exec(compile(source.replace("not is_bw()", "True"), "post_forward_pre_164009", "exec"), _pgm.__dict__, namespace)
        _PG.post_forward = namespace["post_forward"]
    _wrap("pre_forward", before=lambda g: _record("pre_forward", _name(g), {"in_backward": _in_backward()}))
    _wrap("post_forward", after=lambda g, _: _record("post_forward", _name(g), {"in_backward": _in_backward()}))
    def pre_backward_begin(g):
        STATE["current"] = g
        _record("pre_backward_begin", _name(g))

    def pre_backward_end(g, _):
        _record("pre_backward_end", _name(g))
        STATE["current"] = None
    _wrap("pre_backward", before=pre_backward_begin, after=pre_backward_end)
    _wrap("post_backward", after=lambda g, _: _record("post_backward", _name(g)))
    _wrap("reshard", after=lambda g, _: _record("reshard", _name(g)))
    _wrap("finalize_backward", before=lambda g: g._all_gather_result is not None,
          after=lambda g, had: _record("finalize_backward", _name(g), {"dropped_pending_all_gather": had}))
    _wrap("unshard", before=lambda g: g._all_gather_result is None and not g.is_unsharded,
          after=lambda g, fresh: fresh and g._all_gather_result is not None and _record("all_gather_issued", _name(g)))
    original = _PG.__dict__["_prefetch_unshard"]
    fn = original.__func__ if isinstance(original, staticmethod) else original

    def prefetch(target, pass_type):  # issued by the group in pre_backward, else by a forward state
        issuer = _name(STATE["current"]) if STATE["current"] is not None else "(forward state)"
        _record("prefetch", issuer, {"target": _name(target), "pass": str(pass_type)})
        return fn(target, pass_type)
    _PG._prefetch_unshard = staticmethod(prefetch) if isinstance(original, staticmethod) else (lambda self, t, p: prefetch(t, p))


def collect_groups(model):
    GROUPS.clear()
    for module in model.modules():
        if hasattr(module, "_get_fsdp_state"):
            state = module._get_fsdp_state()
            groups = getattr(state, "_fsdp_param_groups", None)
            if groups is None:
                groups = [state._fsdp_param_group] if getattr(state, "_fsdp_param_group", None) is not None else []
            GROUPS.extend(g for g in groups if g not in GROUPS)


# --- the verdict: the harness's per-layer check, on torch's own state ----------------------------
def _backward_again(k):  # groups that run pre_backward again later in the same backward pass
    again = set()
    for e in TIMELINE[k + 1:]:
        if e["event"] == "finalize_backward" or e["step"] != TIMELINE[k]["step"]:
            break
        if e["event"] == "pre_backward_begin":
            again.add(e["group"])
    return again


def verdict():
    for k, e in enumerate(TIMELINE):
        if e["event"] == "post_backward":
            again = _backward_again(k)
            where = f"rank {e['rank']} step {e['step'] + 1}, post_backward of {e['group']}: "
            stale = [g for g in e["pending_all_gather"] if g in e["finished_backward"] and g not in again]
            if stale:
                return "LEAK", (where + ", ".join(f"{g} ({e['pending_all_gather_bytes'][g]} B)" for g in stale) +
                                " finished backward but still hold a pending all-gather")
            unsharded = [g for g in e["unsharded"] if g in e["finished_backward"] and g not in again]
            if unsharded:
                return "LEAK", where + ", ".join(unsharded) + " finished backward but its parameters are still unsharded"
            kept = {g: b for g, b in e["all_reduce_input_bytes"].items() if g != e["group"]}
            if kept:
                return "LEAK", (where + ", ".join(f"{g} ({b} B)" for g, b in kept.items()) +
                                " already reduced but still hold their HSDP reduce output (AllReduceState)")
        if e["event"] == "finalize_backward" and e.get("detail", {}).get("dropped_pending_all_gather"):
            return "LEAK", (f"rank {e['rank']} step {e['step'] + 1}: the all-gather of {e['group']} was never "
                            "consumed and lived until the end of backward")
    return "PASS", "every layer returned to baseline"


def print_table():
    # Allocated bytes relative to the first event of the step (CUDA only).
    print(f"{'step':>4} {'post_backward of':<28} {'alloc B':>10} {'HSDP kept B':>11}  pending all-gathers of finished groups")
    start = {}
    for e in TIMELINE:
        if e["allocated_bytes"] is not None:
            start.setdefault(e["step"], e["allocated_bytes"])
        if e["event"] == "post_backward" and e["rank"] == STATE["rank"]:
            stale = [g for g in e["pending_all_gather"] if g in e["finished_backward"]]
            alloc = "-" if e["allocated_bytes"] is None else str(e["allocated_bytes"] - start[e["step"]])
            kept = sum(e["all_reduce_input_bytes"].values())
            print(f"{e['step'] + 1:>4} {e['group']:<28} {alloc:>10} {kept:>11}  {' '.join(stale)}")


def _start(rank, world, plan):
    """The process group, this rank's device and torch's default device (run and time_steps)."""
    STATE["rank"] = rank
    local_rank, local_world = int(os.environ.get("LOCAL_RANK", rank)), int(os.environ.get("LOCAL_WORLD_SIZE", world))
    cuda = torch.cuda.is_available() and local_world <= torch.cuda.device_count() and not plan.get("cpu")
    STATE["device"] = "cuda" if cuda else "cpu"
    if not dist.is_initialized():  # the batch runner keeps one process group for many scenarios
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29611")
        dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=world)
    TIMELINE.clear()
    if cuda:
        torch.cuda.set_device(local_rank)
    torch.set_default_device(STATE["device"])


def _optimizer(model, plan):
    # Every hyper-parameter explicit: torch.optim.AdamW's own default weight decay is 0.01, the
    # scenario's is 0.
    opt_kind, lr, hyper = plan["optimizer"]
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        return None
    if opt_kind == "adamw":
        return torch.optim.AdamW(params, lr=lr, betas=hyper["betas"], eps=hyper["eps"],
                                 weight_decay=hyper["weight_decay"])
    return torch.optim.SGD(params, lr=lr, weight_decay=hyper["weight_decay"])


def _batches(rank, plan):
    gen = torch.Generator(device=STATE["device"]).manual_seed(plan["seed"] + rank)
    def batch():
        if plan["vocab"]:
            return torch.randint(plan["vocab"], (plan["tokens"],), generator=gen, device=STATE["device"])
        x = torch.randn(plan["tokens"], plan["dim"], generator=gen, device=STATE["device"], dtype=plan["dtype"])
        return x.requires_grad_(plan["input_requires_grad"])
    return batch


def _train_step(model, opt, plan, batch, record):
    """One step of the plan (micro-batches, forwards per backward, optimizer, eval forward); returns
    its loss. `record(event, detail)` marks the phases (the recorder's, or nothing when timing)."""
    total = 0.0
    for micro in range(plan["micro_batches"]):
        if plan["micro_batches"] > 1:
            model.set_is_last_backward(micro + 1 == plan["micro_batches"])
        loss = sum((model(batch()).float().sum() if plan["loss"] == "sum" else model(batch()).float().mean())
                   for _ in range(plan["forwards_per_backward"]))
        record("forward_end", {"micro_batch": micro})
        total += loss.item()
        if loss.requires_grad:
            (loss / plan["micro_batches"]).backward()
        record("backward_end", {"micro_batch": micro})
    if opt:
        opt.step()
        record("optimizer_step", None)
        opt.zero_grad()
        record("zero_grad", None)
    if plan["eval_forward"]:
        with torch.no_grad():
            model(batch())
        record("eval_forward_end", None)
    return total / plan["micro_batches"]


def run(rank, world, plan, build, out):
    _start(rank, world, plan)
    install_recorder(plan["post_forward_in_backward"])
    model = build(STATE["device"], world)
    collect_groups(model)
    opt = _optimizer(model, plan)
    batch = _batches(rank, plan)
    losses = []
    for step in range(plan["steps"]):
        STATE["step"] = step
        losses.append(_train_step(model, opt, plan, batch, lambda event, detail: _record(event, "", detail, "train")))
        _record("step_end", "", {"loss": losses[-1]}, "train")
    word, why = verdict()
    if plan.get("record_dir"):
        write_rank_record(plan["record_dir"], rank, world, losses, word, why)
    if rank == 0:
        print_table()
        print(f"{word}: {why}")
    if out and rank == 0:
        # The conformance-trace format (tests/conformance/recorded/README.md): rank 0's events per step, with the
        # scenario itself, so `shardfuzz conform --traces DIR` replays it on the native runtime.
        steps = [[e for e in TIMELINE if e["step"] == s and "category" not in e] for s in range(plan["steps"])]
        doc = {"shardfuzz_scenario": json.loads(SCENARIO_JSON), "profile": emulated_profile(plan),
               "world_size": world, "torch": torch.__version__, "device": STATE["device"], "error": None,
               "recorded_with": "shardfuzz export --torch", "verdict": word, "message": why, "steps": steps}
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, out)
    if dist.is_initialized() and not plan.get("keep_process_group"):
        dist.destroy_process_group()
    return word


def time_steps(rank, world, plan, build, k):
    """Plain FSDP2's step time: torch's shipped methods (no recorder, no verdict, no pre-fix
    emulation), the plan's steps as warm-up, then k timed steps, each ended by a device
    synchronize. Rank 0 prints one JSON line: the median and every step in ms."""
    import time
    _start(rank, world, plan)
    restore_shipped_methods()
    model = build(STATE["device"], world)
    opt = _optimizer(model, plan)
    batch = _batches(rank, plan)
    sync = torch.cuda.synchronize if STATE["device"] == "cuda" else (lambda: None)
    quiet = lambda event, detail: None
    for _ in range(plan["steps"]):
        _train_step(model, opt, plan, batch, quiet)
    sync()
    times = []
    for _ in range(k):
        t0 = time.perf_counter()
        _train_step(model, opt, plan, batch, quiet)
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    if rank == 0:
        print(json.dumps({"step_ms_median": sorted(times)[len(times) // 2], "step_ms": times, "torch": torch.__version__,
                          "device": STATE["device"], "world": world}))
    if dist.is_initialized():
        dist.destroy_process_group()


def shard_records():
    """Every FSDP parameter's local shard on this rank: what the native RunRecord's shards hold."""
    out = []
    for g in GROUPS:
        for fp in g.fsdp_params:
            local = fp.sharded_param.to_local() if hasattr(fp.sharded_param, "to_local") else fp.sharded_param
            info = fp.mesh_info
            param_dtype = getattr(fp, "param_dtype", None) or local.dtype
            padded = fp._sharded_param_data.numel() if hasattr(fp, "_sharded_param_data") else local.numel()
            out.append({"group": _name(g), "fqn": _unwrapped(getattr(fp, "_param_fqn", None) or ""),
                        "shard_rank": int(getattr(info, "shard_mesh_rank", 0)),
                        "shard_size": int(getattr(info, "shard_mesh_size", 1)),
                        "shard_dim": int(getattr(getattr(fp, "fsdp_placement", None), "dim", 0)),
                        "shape": list(local.shape), "dtype": str(local.dtype).replace("torch.", ""),
                        "padded_bytes": padded * local.element_size(),
                        "unsharded_bytes": padded * int(getattr(info, "shard_mesh_size", 1)) *
                                           torch.empty((), dtype=param_dtype).element_size(),
                        "requires_grad": bool(fp.sharded_param.requires_grad)})
    return out


def write_rank_record(folder, rank, world, losses, word, why):
    """The worker's answer for one rank (read by shardfuzz's torch backend into a RunRecord)."""
    os.makedirs(folder, exist_ok=True)
    doc = {"rank": rank, "world_size": world, "torch": torch.__version__, "device": STATE["device"],
           "timeline": TIMELINE, "losses": losses, "shards": shard_records(), "verdict": word, "message": why}
    path = os.path.join(folder, f"rank-{rank}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f)
    os.replace(path + ".tmp", path)


def emulated_profile(plan):  # what torch ran as: the installed version, or it with PR #164009 undone
    return "torch-2.9" if plan["post_forward_in_backward"] else "torch-2.11"


def main(build, plan):
    parser = argparse.ArgumentParser(description="shardfuzz reproducer on PyTorch FSDP2")
    parser.add_argument("--world", type=int, default=plan["world_size"],
                        help="ranks (processes; gloo on CPU); under torchrun, RANK and WORLD_SIZE decide")
    parser.add_argument("--cpu", action="store_true", help="run on CPU with gloo even when CUDA is there")
    parser.add_argument("--json", default="", help="write the timeline here (one file per rank when world > 1)")
    parser.add_argument("--time-steps", type=int, default=0, metavar="K",
                        help="time K steps of plain FSDP2 (no recorder, no verdict) after the plan's steps as warm-up")
    args = parser.parse_args()
    plan = dict(plan, cpu=args.cpu)
    if args.time_steps > 0:
        if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
            time_steps(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), plan, build, args.time_steps)
        elif args.world == 1:
            time_steps(0, 1, plan, build, args.time_steps)
        else:
            import torch.multiprocessing as mp
            os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
            mp.spawn(time_steps, args=(args.world, plan, build, args.time_steps), nprocs=args.world, join=True)
        sys.exit(0)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # launched by torchrun (or srun with its env)
        word = run(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), plan, build, args.json)
        sys.exit(0 if word == "PASS" else 1)
    if args.world == 1:
        sys.exit(0 if run(0, 1, plan, build, args.json) == "PASS" else 1)
    import torch.multiprocessing as mp
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    mp.spawn(run, args=(args.world, plan, build, args.json), nprocs=args.world, join=True)
