#!/usr/bin/env python3
"""Records many exported reproducers on PyTorch FSDP2 in one process per rank (the batch form of
the persistent worker: torch is imported and the process group made once, 6-8 s, then each
scenario costs its own run only).

Usage: python3 run_batch.py SCRIPTS_DIR OUT_DIR [--world N] [--cpu]
Each SCRIPTS_DIR/NAME.py (written by `shardfuzz conform --emit` or `shardfuzz export --torch`)
whose PLAN world_size is N is run on N ranks; rank 0 writes OUT_DIR/NAME.json in the conformance
trace format, replayed by `shardfuzz conform --traces OUT_DIR`. A scenario that raises gets a
trace with its error instead.
"""
import argparse, glob, importlib.util, json, os, sys, time, traceback


def load(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3].replace("-", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def worker(rank, world, scripts, out_dir, cpu):
    import datetime
    import torch, torch.distributed as dist
    cuda = torch.cuda.is_available() and not cpu and world <= torch.cuda.device_count()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    start, done, failed, seconds = time.time(), 0, 0, {}
    for path in scripts:
        name = os.path.basename(path)[:-3]
        out = os.path.join(out_dir, name + ".json")
        try:
            module = load(path)
            if module.PLAN["world_size"] != world:
                continue
            t0 = time.perf_counter()
            module.run(rank, world, dict(module.PLAN, keep_process_group=True, cpu=not cuda), module.build, out)
            seconds[name] = time.perf_counter() - t0
            done += 1
        except Exception as e:  # the recording failed: say so in the trace
            failed += 1
            if rank == 0:
                with open(out, "w") as f:
                    json.dump({"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-2000:],
                               "steps": []}, f)
        dist.barrier()
    if rank == 0:
        warm = sorted(list(seconds.values())[1:])  # the first run pays for lazy initialisation
        median = warm[len(warm) // 2] if warm else float("nan")
        print(f"run_batch: world {world}: {done} recorded, {failed} failed, {time.time() - start:.1f} s "
              f"(warm median {median * 1000:.1f} ms per scenario)", flush=True)
        with open(os.path.join(out_dir, "timings.txt"), "w") as f:
            f.writelines(f"{name} {s:.6f}\n" for name, s in seconds.items())
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scripts")
    parser.add_argument("out")
    parser.add_argument("--world", type=int, default=1)
    parser.add_argument("--cpu", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    scripts = sorted(glob.glob(os.path.join(args.scripts, "*.py")))
    os.environ.setdefault("MASTER_PORT", str(29700 + args.world))
    if args.world == 1:
        worker(0, 1, scripts, args.out, args.cpu)
    else:
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(args.world, scripts, args.out, args.cpu), nprocs=args.world, join=True)


if __name__ == "__main__":
    main()
