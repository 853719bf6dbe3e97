"""Records a CPU job of PP x DP processes with real process subgroups: a pipeline of PP stages
(each four linear layers of width 512), fed MICROBATCHES microbatches per step GPipe-style
(every forward, then every backward) with activations and their gradients passed between
neighbouring stages by `dist.send`/`dist.recv`, replicated over data-parallel groups of DP
ranks (each stage's gradients all-reduced over its DP group after the last microbatch). Every
collective and transfer runs on gloo; each rank is traced by the PyTorch profiler.

    python3 pp_dp.py OUTDIR PP DP

Ranks are laid out stage-major: rank = stage * DP + replica, so the DP groups are
{0..DP-1}, {DP..2DP-1}, ... and a replica's pipeline is {replica, DP + replica, ...}. Writes
OUTDIR/pp<PP>dp<DP>/rank<R>.json.gz (a job folder: one trace per rank) and
OUTDIR/pp<PP>dp<DP>.timing.json (rank 0's steps timed without the profiler, between
barriers). One intra-op thread per process: the shared 2-core machine runs PP x DP of them.
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

SCHEDULE = dict(wait=2, warmup=3, active=6)
TIMED_STEPS = 20
WIDTH = 512
LAYERS = 4
MICROBATCHES = 4
MICROBATCH = 16


def run(rank, pp, dp, outdir):
    world = pp * dp
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29581"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    stage, replica = rank // dp, rank % dp
    # Every rank creates every group, in the same order (torch.distributed requires it).
    dp_groups = [dist.new_group(list(range(s * dp, (s + 1) * dp))) for s in range(pp)]
    dp_group = dp_groups[stage]
    previous = rank - dp if stage > 0 else None
    following = rank + dp if stage < pp - 1 else None
    torch.manual_seed(stage)
    layers = []
    for _ in range(LAYERS):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    model = nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    torch.manual_seed(1000 + replica)
    inputs = [torch.randn(MICROBATCH, WIDTH) for _ in range(MICROBATCHES)]
    targets = [torch.randn(MICROBATCH, WIDTH) for _ in range(MICROBATCHES)]

    def step():
        opt.zero_grad(set_to_none=True)
        kept = []
        for m in range(MICROBATCHES):
            if previous is None:
                x = inputs[m]
            else:
                x = torch.empty(MICROBATCH, WIDTH)
                dist.recv(x, previous)
                x.requires_grad_()
            y = model(x)
            if following is not None:
                dist.send(y.detach(), following)
            kept.append((x, y))
        for m in range(MICROBATCHES):
            x, y = kept[m]
            if following is None:
                F.mse_loss(y, targets[m]).backward()
            else:
                grad = torch.empty(MICROBATCH, WIDTH)
                dist.recv(grad, following)
                y.backward(grad)
            if previous is not None:
                dist.send(x.grad, previous)
        for p in model.parameters():
            dist.all_reduce(p.grad, group=dp_group)
        opt.step()

    for _ in range(5):
        step()
    dist.barrier()
    name = f"pp{pp}dp{dp}"
    folder = os.path.join(outdir, name)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"rank{rank}.json")
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(**SCHEDULE),
        record_shapes=True,
        on_trace_ready=lambda p: p.export_chrome_trace(path),
    ) as prof:
        for _ in range(sum(SCHEDULE.values())):
            step()
            prof.step()
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)
    dist.barrier()
    rounds_ms = []
    for _ in range(3):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(TIMED_STEPS):
            step()
        dist.barrier()
        rounds_ms.append((time.perf_counter() - t0) * 1e3 / TIMED_STEPS)
    rounds_ms.sort()
    if rank == 0:
        timing = {
            "config": name,
            "steps_per_round": TIMED_STEPS,
            "median_ms": rounds_ms[1],
            "rounds_ms": rounds_ms,
            "torch": torch.__version__,
            "load_average": os.getloadavg(),
        }
        with open(os.path.join(outdir, f"{name}.timing.json"), "w") as f:
            json.dump(timing, f, indent=1)
        print(f"{name}: median {timing['median_ms']:.3f} ms (no profiler)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    outdir, pp, dp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.makedirs(outdir, exist_ok=True)
    mp.spawn(run, args=(pp, dp, outdir), nprocs=pp * dp)
