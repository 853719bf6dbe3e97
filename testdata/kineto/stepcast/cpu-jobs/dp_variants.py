"""Records CPU jobs of data parallel training in the two variants real loops use to cut its
memory or its traffic, over gloo, each rank traced by the PyTorch profiler:

    python3 dp_variants.py OUTDIR zero WORLD
    python3 dp_variants.py OUTDIR powersgd TP DP

`zero`: `DistributedDataParallel` over the world, the optimizer state sharded by
`torch.distributed.optim.ZeroRedundancyOptimizer` (Adam) within pairs of ranks made by
`dist.new_subgroups(2)` ({0, 1}, {2, 3}, ...): after each rank updates its shard, each
parameter is broadcast by the rank that owns it to its pair, so every step holds broadcasts
from every member of a pair. Writes OUTDIR/zero-dp<WORLD>/.

`powersgd`: `tp_dp.py`'s tensor-parallel blocks (Megatron-style all-reduces over TP groups of
TP ranks, TP-major layout), replicated by DDP over DP groups with PowerSGD's gradient
compression (`powerSGD_hook`, rank 1, from the second iteration: the bucket's vectors
all-reduced uncompressed, its matrices as P, then Q; one bucket, see below), and gradients accumulated over two
microbatches (`no_sync()` on the first, so DDP communicates on the second only). Writes
OUTDIR/powersgd-tp<TP>dp<DP>/.

Each folder holds rank<R>.json.gz (a job folder: one trace per rank); OUTDIR/<folder>.timing.json
holds rank 0's steps timed without the profiler, between barriers. One intra-op thread per
process.
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
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

# Megatron-style blocks split over a TP group: tp_dp.py's, as tp_pp_dp.py uses them.
from tp_dp import WIDTH, ParallelBlock

SCHEDULE = dict(wait=2, warmup=3, active=6)
TIMED_STEPS = 20
LAYERS = 4
BATCH = 32


def zero_job(rank, world):
    """DDP over the world, Adam's state sharded over pairs by ZeRO."""
    pair, _ = dist.new_subgroups(group_size=2)
    torch.manual_seed(0)
    layers = []
    for _ in range(LAYERS):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    model = DDP(nn.Sequential(*layers))
    opt = ZeroRedundancyOptimizer(
        model.parameters(), optimizer_class=torch.optim.Adam, process_group=pair, lr=1e-3
    )
    torch.manual_seed(1000 + rank)
    x = torch.randn(BATCH, WIDTH)
    y = torch.randn(BATCH, WIDTH)

    def step():
        opt.zero_grad(set_to_none=True)
        F.mse_loss(model(x), y).backward()
        opt.step()

    return f"zero-dp{world}", step


def powersgd_job(rank, tp, dp):
    """TP blocks, DDP over DP groups with PowerSGD, two microbatches accumulated."""
    world = tp * dp
    tp_index, dp_index = rank % tp, rank // tp
    # Every rank creates every group, in the same order (torch.distributed requires it).
    tp_groups = [dist.new_group(list(range(d * tp, (d + 1) * tp))) for d in range(dp)]
    dp_groups = [dist.new_group(list(range(t, world, tp))) for t in range(tp)]
    tp_group, dp_group = tp_groups[dp_index], dp_groups[tp_index]
    torch.manual_seed(tp_index)
    model = nn.Sequential(*[ParallelBlock(tp, tp_group) for _ in range(LAYERS)])
    # One bucket: PowerSGD launches each bucket's Q all-reduce from the callback of its P
    # all-reduce, so with several buckets the ranks' orders on one gloo group can differ (gloo
    # then aborts on a size mismatch); NCCL jobs do not see this.
    model = DDP(model, process_group=dp_group, bucket_cap_mb=100)
    state = powerSGD.PowerSGDState(
        process_group=dp_group, matrix_approximation_rank=1, start_powerSGD_iter=2
    )
    model.register_comm_hook(state, powerSGD.powerSGD_hook)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    torch.manual_seed(1000 + dp_index)
    xs = torch.randn(2, BATCH // 2, WIDTH)
    ys = torch.randn(2, BATCH // 2, WIDTH)

    def step():
        opt.zero_grad(set_to_none=True)
        with model.no_sync():
            F.mse_loss(model(xs[0]), ys[0]).backward()
        F.mse_loss(model(xs[1]), ys[1]).backward()
        opt.step()

    return f"powersgd-tp{tp}dp{dp}", step


def run(rank, world, outdir, kind, sizes):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29611"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    if kind == "zero":
        name, step = zero_job(rank, world)
    else:
        name, step = powersgd_job(rank, *sizes)
    for _ in range(5):
        step()
    dist.barrier()
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


USAGE = "usage: dp_variants.py OUTDIR zero WORLD | dp_variants.py OUTDIR powersgd TP DP"

if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 3 and args[1] == "zero" and int(args[2]) % 2 == 0:
        sizes = [int(args[2])]
        world = sizes[0]
    elif len(args) == 4 and args[1] == "powersgd":
        sizes = [int(args[2]), int(args[3])]
        world = sizes[0] * sizes[1]
    else:
        sys.exit(USAGE)
    outdir = args[0]
    os.makedirs(outdir, exist_ok=True)
    mp.spawn(run, args=(world, outdir, args[1], sizes), nprocs=world)
