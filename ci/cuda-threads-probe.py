#!/usr/bin/env python3
# Measured on the GPU machine (torch 2.11, one H200) for issue 6's threads-on-CUDA design: two
# Python threads each run a backward of a CUDA graph whose hook waits (5 s) for the other's hook,
# as two ranks' post-backward reduce-scatters would. Result, 2026-12-03: both hooks ran on the
# autograd engine's one CUDA worker thread ("Dummy-1"), one after the other, and neither met the
# other: a collective inside backward cannot complete across rank threads sharing one GPU.
# Usage (GPU machine): python3 ci/cuda-threads-probe.py
import threading, torch, time
dev = torch.device("cuda", 0)
barrier = threading.Barrier(2, timeout=5)
info = {}
def rank(r):
    x = torch.randn(64, 64, device=dev, requires_grad=True)
    def hook(g):
        info[r] = threading.current_thread().name
        try:
            barrier.wait()
            info[f"{r}-met"] = True
        except threading.BrokenBarrierError:
            info[f"{r}-met"] = False
        return g
    z = (x * 3)
    z.register_hook(hook)
    z.sum().backward()
ts = [threading.Thread(target=rank, args=(r,), name=f"rank{r}") for r in range(2)]
t0 = time.time()
for t in ts: t.start()
for t in ts: t.join()
print("hooks ran on", info, "in", round(time.time() - t0, 2), "s")
