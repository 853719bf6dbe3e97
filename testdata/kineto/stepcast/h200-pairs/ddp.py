"""Records a data-parallel job of WORLD processes sharing the one GPU: the `mlp` workload of
record.py under DistributedDataParallel with the gloo backend (NCCL refuses two ranks on one
GPU), each rank traced by the PyTorch profiler as record.py does.

    python3 ddp.py OUTDIR WORLD

Writes OUTDIR/ddp-gloo-w<WORLD>/rank<R>.json.gz (a job folder: one trace per rank) and
OUTDIR/ddp-gloo-w<WORLD>.timing.json (rank 0's steps timed without the profiler, between
device synchronizations and a barrier). Several processes on one GPU share its SMs: this
measures DDP's mechanics (bucketing, gloo all-reduce through host memory, the overlap with
backward), not the scaling of a job with a GPU per rank.
"""

import gzip
import json
import os
import shutil
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

SCHEDULE = dict(wait=2, warmup=3, active=6)
TIMED_STEPS = 30


def run(rank, world, outdir):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29541"
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    layers = []
    for _ in range(16):
        layers += [nn.Linear(1024, 1024), nn.ReLU()]
    model = DDP(nn.Sequential(*layers[:-1]).cuda())
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    x = torch.randn(64, 1024, device="cuda")
    y = torch.randn(64, 1024, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        F.mse_loss(model(x), y).backward()
        opt.step()

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    folder = os.path.join(outdir, f"ddp-gloo-w{world}")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"rank{rank}.json")
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
        schedule=torch.profiler.schedule(**SCHEDULE),
        record_shapes=True,
        on_trace_ready=lambda p: p.export_chrome_trace(path),
    ) as prof:
        for _ in range(sum(SCHEDULE.values())):
            step()
            prof.step()
    torch.cuda.synchronize()
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)
    dist.barrier()
    rounds_ms = []
    for _ in range(3):
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(TIMED_STEPS):
            step()
        torch.cuda.synchronize()
        dist.barrier()
        rounds_ms.append((time.perf_counter() - t0) * 1e3 / TIMED_STEPS)
    rounds_ms.sort()
    if rank == 0:
        timing = {
            "config": f"ddp-gloo-w{world}",
            "steps_per_round": TIMED_STEPS,
            "median_ms": rounds_ms[1],
            "rounds_ms": rounds_ms,
            "torch": torch.__version__,
            "device": torch.cuda.get_device_name(),
        }
        with open(os.path.join(outdir, f"ddp-gloo-w{world}.timing.json"), "w") as f:
            json.dump(timing, f, indent=1)
        print(f"ddp-gloo-w{world}: median {timing['median_ms']:.3f} ms (no profiler)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    outdir, world = sys.argv[1], int(sys.argv[2])
    os.makedirs(outdir, exist_ok=True)
    mp.spawn(run, args=(world, outdir), nprocs=world)
