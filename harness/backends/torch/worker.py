#!/usr/bin/env python3
"""The persistent torch worker: `shardfuzz --backend torch` (and `conform --torch-python`) drive it.

One process start pays for importing torch and making the process group (6-8 s); every scenario
after that costs only its own run. The harness writes each scenario as an exported program
(`shardfuzz export --torch`) and sends one request per line on stdin:

    {"id": 7, "script": "/tmp/.../case-7.py", "out": "/tmp/.../case-7", "world": 2, "cpu": false,
     "deadline_s": 60}

The worker keeps a pool of rank processes per world size and device (spawned; NCCL on the GPU when
there is one per rank, gloo on CPU otherwise; the least recently used pools are closed beyond 8
rank processes in all) and answers one line on stdout:

    {"id": 7, "ok": true, "seconds": 0.21, "ranks": [...], "torch": "2.11.0", "device": "cuda"}
    {"id": 7, "ok": false, "kind": "exception" | "deadline" | "crash", "error": "rank 1: ...", ...}

`{"op": "version"}` answers `{"ok": true, "torch": "2.11.0+cu130"}` (the installed distribution's
version, read without importing torch); `{"op": "quit"}` ends the worker.

Each rank writes OUT/rank-R.json (its timeline, losses, shards; see repro_prelude.run). A rank that
raises, hangs past the deadline or dies is reported, the pool is torn down (its process group can
no longer be trusted) and the next request starts a fresh one. Everything but the protocol lines
goes to stderr.
"""
import importlib.util, json, os, queue, socket, sys, time, traceback


MAX_RANK_PROCESSES = 8  # pools for several world sizes stay warm up to this many rank processes


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def warm_up_device(torch):
    """Allocates what torch keeps on the device for the process's life once a thread has computed
    there, before any case: a cuBLAS handle and its workspace (32 MiB on an H200) for this thread and
    for autograd's device thread, per op family, in float32 and bfloat16 — the native probe's
    warm_up_device, so neither side's first layer backward counts a workspace the other does not."""
    for dtype in (torch.float32, torch.bfloat16):
        a = torch.ones(64, 64, device="cuda", dtype=dtype, requires_grad=True)
        b = torch.ones(2, 64, 64, device="cuda", dtype=dtype, requires_grad=True)
        bias = torch.ones(64, device="cuda", dtype=dtype, requires_grad=True)
        y = torch.addmm(bias, a, a).sum() + torch.mm(a, a).sum() + torch.bmm(b, b).sum() + torch.matmul(b, a).sum()
        y.float().backward()
    torch.cuda.synchronize()


def rank_main(rank, world, cpu, port, requests, results):
    os.dup2(2, 1)  # the parent's stdout is the protocol channel
    try:
        import datetime
        # As the native probe does (runtime/memory/device_memory.h): no cuBLASLt workspace, which the
        # first backward taking the Lt path would allocate for the process's life (a user's setting wins).
        os.environ.setdefault("CUBLASLT_WORKSPACE_SIZE", "0")
        import torch, torch.distributed as dist
        cuda = torch.cuda.is_available() and not cpu and world <= torch.cuda.device_count()
        if cuda:
            torch.cuda.set_device(rank)
            warm_up_device(torch)
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
        os.environ["LOCAL_RANK"], os.environ["LOCAL_WORLD_SIZE"] = str(rank), str(world)  # not a launcher's
        dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=120))
        results.put(("ready", rank, {"torch": torch.__version__, "device": "cuda" if cuda else "cpu"}))
    except BaseException as e:
        results.put(("error", rank, {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:]}))
        return
    while True:
        request = requests.get()
        if request is None:
            break
        t0 = time.perf_counter()
        try:
            module = load(request["script"], f"shardfuzz_case_{request['id']}")
            plan = dict(module.PLAN, keep_process_group=True, cpu=not cuda, record_dir=request["out"])
            module.run(rank, world, plan, module.build, os.path.join(request["out"], "trace.json"))
            results.put(("done", rank, {"id": request["id"], "seconds": time.perf_counter() - t0}))
        except BaseException as e:
            results.put(("error", rank, {"id": request["id"], "error": f"{type(e).__name__}: {e}",
                                         "traceback": traceback.format_exc()[-3000:]}))
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Pool:
    """World-size rank processes with one request queue each and a shared result queue."""

    def __init__(self, world, cpu, deadline_s):
        import multiprocessing as mp
        ctx = mp.get_context("spawn")
        self.world, self.cpu, self.broken, self.info = world, cpu, False, {}
        self.results = ctx.Queue()
        self.requests = [ctx.Queue() for _ in range(world)]
        port = free_port()
        self.procs = [ctx.Process(target=rank_main, args=(r, world, cpu, port, self.requests[r], self.results),
                                  daemon=True) for r in range(world)]
        for p in self.procs:
            p.start()
        ready = self.collect("ready", None, deadline_s)
        if not ready["ok"]:
            self.close()
            raise RuntimeError(ready["error"])
        self.info = ready["ranks"][0]

    def collect(self, what, request_id, deadline_s):
        """Waits for every rank's answer; the first error, a dead rank or the deadline ends it."""
        answers, end = {}, time.monotonic() + deadline_s
        while len(answers) < self.world:
            try:
                kind, rank, payload = self.results.get(timeout=0.2)
            except queue.Empty:
                dead = [r for r, p in enumerate(self.procs) if p.exitcode is not None and r not in answers]
                if dead:
                    self.broken = True
                    r = dead[0]
                    return {"ok": False, "kind": "crash",
                            "error": f"rank {r}: the rank process died (exit code {self.procs[r].exitcode}) during {what}"}
                if time.monotonic() > end:
                    self.broken = True
                    missing = sorted(set(range(self.world)) - set(answers))
                    return {"ok": False, "kind": "deadline",
                            "error": f"rank {missing[0]}: no answer to {what} within {deadline_s:.0f} s "
                                     f"(ranks {missing} still running: a hang)"}
                continue
            if payload and payload.get("id", request_id) != request_id:
                continue  # a late answer to an earlier, abandoned request
            if kind == "error":
                self.broken = self.world > 1  # the other ranks may wait in a collective forever
                return {"ok": False, "kind": "exception", "error": f"rank {rank}: {payload['error']}",
                        "traceback": payload.get("traceback", "")}
            answers[rank] = payload
        return {"ok": True, "ranks": [answers[r] for r in range(self.world)]}

    def run(self, request):
        for q in self.requests:
            q.put(request)
        return self.collect("scenario " + os.path.basename(request["script"]), request["id"],
                            float(request.get("deadline_s", 120)))

    def close(self):
        for q in self.requests:
            try:
                q.put(None)
            except Exception:
                pass
        for p in self.procs:
            p.join(timeout=0 if self.broken else 5)
            if p.is_alive():
                p.kill()
                p.join()


def main():
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    pools = {}  # (world, cpu) -> Pool, least recently used first; at most MAX_RANK_PROCESSES in all
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("op") == "quit":
            break
        if request.get("op") == "version":  # the installed torch, without importing it here
            try:
                from importlib.metadata import version
                reply = {"ok": True, "torch": version("torch")}
            except Exception as e:
                reply = {"ok": False, "kind": "start", "error": f"torch is not installed for {sys.executable}: {e}"}
            protocol.write(json.dumps(dict(reply, id=request.get("id", 0))) + "\n")
            continue
        key = (int(request["world"]), bool(request.get("cpu", False)))
        pool = pools.pop(key, None)
        if pool is not None and pool.broken:
            pool.close()
            pool = None
        t0 = time.perf_counter()
        try:
            if pool is None:
                while pools and sum(p.world for p in pools.values()) + key[0] > MAX_RANK_PROCESSES:
                    pools.pop(next(iter(pools))).close()
                pool = Pool(key[0], key[1], float(request.get("start_deadline_s", 180)))
            reply = pool.run(request)
        except Exception as e:
            reply = {"ok": False, "kind": "start", "error": f"starting {key[0]} rank process(es): {e}"}
            pool = None
        reply.update(id=request["id"], seconds=time.perf_counter() - t0, **(pool.info if pool else {}))
        if pool is not None:
            pools[key] = pool
        protocol.write(json.dumps(reply) + "\n")
    for pool in pools.values():
        pool.close()


if __name__ == "__main__":
    main()
