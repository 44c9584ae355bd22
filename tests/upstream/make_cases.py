#!/usr/bin/env python3
"""Writes tests/upstream/cases/*.json: PyTorch's FSDP2 tests, translated into shardfuzz scenarios
with the expectations the upstream tests assert (README.md says which test each family comes from,
the upstream commit read, and where the translation deliberately differs).

Usage: python3 tests/upstream/make_cases.py   (rewrites cases/; commit the result)

Each family below is a readable table: one row per sub-test, and a function that turns the upstream
test's rule for its expected list into the list for that row. The model is upstream's Transformer as
the native zoo has it: `embed` (tok_embeddings), blocks `layers.i` (attention q/k/v/o, RMSNorms,
an MLP), a final norm and `out`, all non-block parameters on the root ("" in upstream's names).

Upstream's event tuples are (kind, module, TrainingState): "unshard" is every unshard that is not
a no-op, "reshard" every reshard but a FORWARD one that keeps the parameters, "post_backward"
after the group's post_backward; ("prefetch", issuer, target) is the native timeline's own prefetch
event, used where upstream checks a prefetch only numerically (an explicit list's prefetch is issued by the
state, which the traces label "(forward state)").
"""
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cases")
COMM = "test_fully_shard_comm.py::TestFullyShardPrefetch::"
F, PB, POB = "FORWARD", "PRE_BACKWARD", "POST_BACKWARD"
NEWER = ("torch-2.11", "torch-2.9", "strict")  # the root honours an explicit reshard_after_forward


def raf_name(raf):
    return {True: "raf_true", False: "raf_false", "auto": "raf_none"}.get(raf, f"raf_{raf}")


def scenario(name, profile, world, n_layers, raf, ac="none", steps=2, dims=None, lists=None, **extra):
    """The Transformer of upstream's tests: fully_shard on every block, then on the root."""
    lists = lists or {}
    blocks = [{"kind": "mlp", "attention": True, "norm": True, "ac": ac} for _ in range(n_layers)]
    shard = {"": {"reshard_after_forward": raf}}
    for i in range(n_layers):
        shard[f"layers.{i}"] = dict({"reshard_after_forward": raf}, **lists.get(f"layers.{i}", {}))
    sc = {"schema": 1, "name": name, "seed": 42, "world_size": world, "profile": profile, "steps": steps,
          "dims": dims or {"dim": 16, "hidden": 64, "heads": 2, "tokens": 4, "vocab": 32},
          "loss": "sum", "optimizer": {"kind": "adamw", "lr": 0.01},
          "embed": True, "final_norm": True, "blocks": blocks, "fully_shard": shard}
    sc.update(extra)
    return sc


def root_reshards(raf, profile):
    """Whether the root reshards after forward: torch <= 2.7 clamps it whatever was passed
    (int included); newer honours an explicit value, and None ("auto") means False for the root."""
    return raf not in (False, "auto") and profile in NEWER


def unshards(group, state, n):
    return [["unshard", f"layers.{i}" if i is not None else "", state] for i in group(n)]


def ev(kind, module, state):
    return [kind, module, state]


CASES = {}


def add(name, upstream, sc, **expect):
    assert name not in CASES, name
    CASES[name] = dict({"upstream": upstream, "scenario": sc}, **expect)


def phase(step, which, events=None, micro_batch=0, **more):
    p = {"step": step, "phase": which}
    if micro_batch:
        p["micro_batch"] = micro_batch
    if events is not None:
        p["events"] = events
    p.update(more)
    return p


# --- _test_backward_prefetch_forward_backward: 1 forward, 1 backward, 3 layers, implicit prefetch -----

def fwd_bwd_backward(raf, profile, n=3):
    out = [ev("unshard", "", PB)] if root_reshards(raf, profile) else []
    last = n - 1
    out += [ev("unshard", f"layers.{last}", PB), ev("unshard", f"layers.{last - 1}", PB)]
    for i in range(last, 0, -1):
        out.append(ev("post_backward", f"layers.{i}", POB))
        if i - 2 >= 0:
            out.append(ev("unshard", f"layers.{i - 2}", PB))
    out += [ev("post_backward", "layers.0", POB), ev("post_backward", "", POB)]
    if raf is False:
        out = [e for e in out if e[0] != "unshard"]
    return out


def forward_unshards(n, root=True):
    return ([ev("unshard", "", F)] if root else []) + [ev("unshard", f"layers.{i}", F) for i in range(n)]


def family_backward_prefetch():
    rows = [(p, w, raf, ac) for p in ("torch-2.11", "torch-2.9", "torch-2.7") for w in (2,)
            for raf in (True, False, 2, "auto") for ac in ("none", "non_reentrant")]
    rows += [("torch-2.11", 4, 2, "none"), ("torch-2.11", 4, 2, "non_reentrant"), ("torch-2.11", 3, True, "none")]
    for profile, world, raf, ac in rows:
        name = f"backward_prefetch.{raf_name(raf)}.ac_{ac}.w{world}.{profile}"
        sc = scenario(name, profile, world, 3, raf, ac)
        steps = [phase(s, "forward", forward_unshards(3)) for s in range(2)]
        steps += [phase(s, "backward", fwd_bwd_backward(raf, profile)) for s in range(2)]
        add(name, COMM + "test_fully_shard_backward_prefetch (_test_backward_prefetch_forward_backward, "
            f"reshard_after_forward={raf}, checkpoint_impl={'utils' if ac != 'none' else None})", sc,
            record=["unshard", "post_backward"], events=steps)


# --- _test_backward_prefetch_multi_forward: 2 forwards before 1 backward --------------------------

def multi_forward_forward(raf, profile, n=3):
    out = forward_unshards(n)
    if root_reshards(raf, profile):
        out.append(ev("unshard", "", F))
    if raf is not False:
        out += [ev("unshard", f"layers.{i}", F) for i in range(n)]
    return out


def multi_forward_backward(raf, profile, n=3):
    first = fwd_bwd_backward(raf, profile, n)[:-1]  # the root's post_backward comes at the very end
    again = fwd_bwd_backward(True, "torch-2.7", n)[:-1]  # the post-backward resharded: real unshards
    return first + again + [ev("post_backward", "", POB)]


def family_multi_forward():
    rows = [(p, 2, raf, ac) for p in ("torch-2.11", "strict") for raf in (True, False, 2, "auto")
            for ac in ("none", "non_reentrant")]
    rows += [("strict", 3, raf, ac) for raf in (True, False) for ac in ("none", "non_reentrant")]
    rows += [("torch-2.9", 2, True, "non_reentrant"), ("torch-2.7", 2, True, "none")]
    for profile, world, raf, ac in rows:
        name = f"multi_forward.{raf_name(raf)}.ac_{ac}.w{world}.{profile}"
        sc = scenario(name, profile, world, 3, raf, ac, steps=1, forwards_per_backward=2)
        add(name, COMM + "test_fully_shard_backward_prefetch (_test_backward_prefetch_multi_forward, "
            f"reshard_after_forward={raf}, checkpoint_impl={'utils' if ac != 'none' else None})", sc,
            record=["unshard", "post_backward"],
            events=[phase(0, "forward", multi_forward_forward(raf, profile)),
                    phase(0, "backward", multi_forward_backward(raf, profile))])


# --- test_set_modules_to_forward_prefetch / test_set_modules_to_backward_prefetch: 4 layers, -------
# --- reshard_after_forward=True, checkpoint_impl="utils" (non-reentrant AC inside the hooks) --------

def explicit_backward(profile, order):
    """The backward list of both explicit-prefetch tests: `order` is the unshards and post-backwards
    of the blocks, each post_backward preceded by its POST_BACKWARD reshard."""
    out = [ev("unshard", "", PB)] if root_reshards(True, profile) else []
    for kind, i in order:
        if kind == "u":
            out.append(ev("unshard", f"layers.{i}", PB))
        else:
            out += [ev("reshard", f"layers.{i}", POB), ev("post_backward", f"layers.{i}", POB)]
    return out + [ev("reshard", "", POB), ev("post_backward", "", POB)]


IMPLICIT_4 = [("u", 3), ("u", 2), ("p", 3), ("u", 1), ("p", 2), ("u", 0), ("p", 1), ("p", 0)]


def forward_prefetch_forward(profile, k, n=4):
    out = [ev("unshard", "", F), ev("unshard", "layers.0", F)]
    out += [ev("unshard", f"layers.{j}", F) for j in range(1, k + 1)]
    for i in range(n):
        out.append(ev("reshard", f"layers.{i}", F))
        if i + k + 1 < n:
            out.append(ev("unshard", f"layers.{i + k + 1}", F))
    return out + ([ev("reshard", "", F)] if root_reshards(True, profile) else [])


def family_forward_prefetch():
    for profile in ("torch-2.11", "torch-2.9", "torch-2.7", "strict"):
        for k in (1, 2):
            name = f"set_modules_to_forward_prefetch.k{k}.{profile}"
            lists = {f"layers.{i}": {"forward_prefetch": [f"layers.{i + j}" for j in range(1, k + 1)]}
                     for i in range(4 - k)}
            sc = scenario(name, profile, 2, 4, True, "non_reentrant", lists=lists)
            events = []
            for s in range(2):
                events += [phase(s, "forward", forward_prefetch_forward(profile, k)),
                           phase(s, "backward", explicit_backward(profile, IMPLICIT_4))]
            add(name, COMM + f"test_set_modules_to_forward_prefetch (num_to_prefetch={k})", sc,
                record=["unshard", "reshard", "post_backward"], events=events)


def backward_prefetch_forward(profile, n=4):
    out = [ev("unshard", "", F)]
    for i in range(n):
        out += [ev("unshard", f"layers.{i}", F), ev("reshard", f"layers.{i}", F)]
    return out + ([ev("reshard", "", F)] if root_reshards(True, profile) else [])


def family_backward_prefetch_lists():
    orders = {1: IMPLICIT_4,
              2: [("u", 3), ("u", 2), ("u", 1), ("p", 3), ("u", 0), ("p", 2), ("p", 1), ("p", 0)]}
    for profile in ("torch-2.11", "torch-2.9", "torch-2.7", "strict"):
        for k in (1, 2):
            name = f"set_modules_to_backward_prefetch.k{k}.{profile}"
            lists = {f"layers.{i}": {"backward_prefetch": [f"layers.{i - j}" for j in range(1, k + 1)]}
                     for i in range(k, 4)}
            sc = scenario(name, profile, 2, 4, True, "non_reentrant", lists=lists)
            events = []
            for s in range(2):
                events += [phase(s, "forward", backward_prefetch_forward(profile)),
                           phase(s, "backward", explicit_backward(profile, orders[k]))]
            add(name, COMM + f"test_set_modules_to_backward_prefetch (num_to_prefetch={k})", sc,
                record=["unshard", "reshard", "post_backward"], events=events)


# --- test_backward_misprefetch: in_proj prefetches out_proj in backward (already done with it) -----

def family_misprefetch():
    fc1, fc2 = "layers.0.mlp.fc1", "layers.0.mlp.fc2"
    for profile in ("torch-2.11", "torch-2.9", "strict"):
        name = f"backward_misprefetch.{profile}"
        sc = scenario(name, profile, 2, 1, True, steps=3)
        sc["blocks"][0]["attention"] = False
        sc["fully_shard"] = {"": {"reshard_after_forward": True},
                             fc1: {"reshard_after_forward": True, "backward_prefetch": [fc2]},
                             fc2: {"reshard_after_forward": True}}
        mis = fc2 + (" (skipped)" if profile == "strict" else "")
        events = [phase(s, "backward", [ev("prefetch", "", fc2), ev("prefetch", fc2, fc1), ev("prefetch", "(forward state)", mis)])
                  for s in range(3)]
        add(name, COMM + "test_backward_misprefetch", sc, record=["prefetch"], events=events,
            properties=["parity_with_reference"],
            note="upstream checks only parity with a DDP-style reference; the prefetch list shows the misprefetch "
                 "(strict skips it: the target already finished backward)")


# --- test_fully_shard_communication_count: ModelArgs() (2 blocks), world min(4, GPUs) --------------

def family_comm_count():
    rows = [("torch-2.11", w, raf) for w in (2, 3, 4) for raf in (True, False, 2, "auto") if raf != 2 or w % 2 == 0]
    rows += [("torch-2.7", w, raf) for w in (2, 4) for raf in (True, False, 2, "auto")]
    rows += [("strict", 4, True), ("torch-2.9", 4, 2)]
    nb = 2
    for profile, world, raf in rows:
        name = f"communication_count.{raf_name(raf)}.w{world}.{profile}"
        sc = scenario(name, profile, world, nb, raf, steps=1)
        if raf is False:
            bwd_ag = 0
        else:
            bwd_ag = nb + (1 if root_reshards(raf, profile) else 0)
        add(name, "test_fully_shard_comm.py::TestFullyShardCommunication::test_fully_shard_communication_count "
            f"(reshard_after_forward={raf}, world size {world})", sc,
            counts=[phase(0, "forward", all_gathers=nb + 1, reduce_scatters=0),
                    phase(0, "backward", all_gathers=bwd_ag, reduce_scatters=nb + 1)],
            note="torch-2.7 rows follow the older test, where the root never reshards after forward "
                 "(an explicit True or an int included)" if profile == "torch-2.7" else "")


# --- test_fully_shard_training.py: parameter registration after forward / backward ----------------

def family_registration():
    rows = [(p, 2, raf) for p in ("torch-2.11", "torch-2.7") for raf in (True, False, "auto")]
    rows += [(p, 4, 2) for p in ("torch-2.11", "torch-2.7")]
    nb = 3
    for profile, world, raf in rows:
        name = f"param_registration.{raf_name(raf)}.w{world}.{profile}"
        sc = scenario(name, profile, world, nb, raf, steps=2)
        if raf is False:
            after_forward = [""] + [f"layers.{i}" for i in range(nb)]
        else:
            after_forward = [] if root_reshards(raf, profile) else [""]
        unsharded = []
        for s in range(2):
            unsharded += [phase(s, "forward", modules=after_forward), phase(s, "backward", modules=[])]
        add(name, "test_fully_shard_training.py::TestFullyShardRegisteredParams::test_param_registration_after_forward "
            f"and ::test_param_registration_after_backward (reshard_after_forward={raf})", sc, unsharded=unsharded,
            note="upstream checks which parameters are registered as DTensors (sharded) or plain tensors (unsharded); "
                 "natively: which groups hold unsharded parameters when the phase ends")


# --- test_fully_shard_training.py: gradient accumulation (set_is_last_backward) ---------------------

def family_gradient_accumulation():
    nb = 2
    for profile in ("torch-2.11", "strict", "torch-2.9"):
        for raf in (True, False):
            for micro in (2, 3):
                if profile == "torch-2.9" and micro == 3:
                    continue
                name = f"gradient_accumulation.{raf_name(raf)}.mb{micro}.{profile}"
                sc = scenario(name, profile, 2, nb, raf, steps=2, micro_batches=micro)
                counts, events = [], []
                for s in range(2):
                    for m in range(micro):
                        counts += [phase(s, "forward", micro_batch=m, all_gathers=nb + 1, reduce_scatters=0),
                                   phase(s, "backward", micro_batch=m,
                                         all_gathers=0 if raf is False else nb + 1, reduce_scatters=nb + 1)]
                        events += [phase(s, "backward", fwd_bwd_backward(raf, profile, nb), micro_batch=m)]
                add(name, "test_fully_shard_training.py::TestFullyShardGradientAccumulation::test_gradient_accumulation "
                    f"(mode none: every micro-batch reduces; set_is_last_backward on the last; reshard_after_forward={raf})",
                    sc, record=["unshard", "post_backward"], counts=counts, events=events,
                    properties=["parity_with_reference"],
                    note="native has no set_requires_gradient_sync / set_reshard_after_backward: only the mode where "
                         "every micro-batch reduce-scatters is translated")


# --- test_fully_shard_memory.py::test_fully_shard_training_memory (world 2, 3 blocks, dim 768) -----

MEMORY_FORMULAS = {
    # (forward, backward) coefficients of upstream's bound; the 16 MB buffer is added to each.
    True: ({"block": 3, "non_block": 1, "sharded": 1}, {"block": 4, "non_block": 1, "sharded": 2}),
    False: ({"sharded": 1, "unsharded": 1, "block": 1}, {"sharded": 1, "unsharded": 1, "block": 1.5}),
}


def family_memory():
    dims = {"dim": 768, "hidden": 3072, "heads": 12, "tokens": 4, "vocab": 32}
    for raf in (True, False):
        for variant, bwd_block in (("", None), (".backward_3x_block", 3)):
            if variant and raf is False:
                continue
            name = f"training_memory.{raf_name(raf)}{variant}.w2.torch-2.11"
            sc = scenario(name, "torch-2.11", 2, 3, raf, steps=1, dims=dims)
            fwd, bwd = (dict(f, buffer_mb=16) for f in MEMORY_FORMULAS[raf])
            if bwd_block:
                bwd["block"] = bwd_block
            add(name, "test_fully_shard_memory.py::TestFullyShardMemory::test_fully_shard_training_memory "
                f"(reshard_after_forward={raf}, use_cpu_offload=False)", sc,
                memory=[phase(0, "forward", formula=fwd, max_ratio=1.01),
                        phase(0, "backward", formula=bwd, max_ratio=1.01)],
                note="upstream measures peak active CUDA bytes since before the model; natively the allocator "
                     "peak since wrapping, at the end of the phase (cumulative, as upstream's). The backward "
                     "bound with 3 x block is the older test's (before 65a5602af)" if variant else
                "upstream measures peak active CUDA bytes since before the model; natively the allocator peak "
                "since wrapping, at the end of the phase (cumulative, as upstream's)")


def main():
    for family in (family_backward_prefetch, family_multi_forward, family_forward_prefetch,
                   family_backward_prefetch_lists, family_misprefetch, family_comm_count, family_registration,
                   family_gradient_accumulation, family_memory):
        family()
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    for name, case in sorted(CASES.items()):
        case = {k: v for k, v in case.items() if v not in ("", None, [])}
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(case, f, indent=1)
            f.write("\n")
    families = {}
    for name in CASES:
        families[name.split(".")[0]] = families.get(name.split(".")[0], 0) + 1
    print(f"{len(CASES)} cases: " + ", ".join(f"{k} {v}" for k, v in families.items()))


if __name__ == "__main__":
    main()
