"""Records a CPU job of data parallel training with the bookkeeping real training loops do
around it, over gloo: `DistributedDataParallel` over the world, and every step the loss
all-reduced over the world for logging, the learning rate broadcast from rank 0, each rank's
metrics gathered on every rank (`all_gather_object`: sizes, then pickled bytes) and on rank 0
(`gather`), a reduction to rank 0 (`reduce`), an all-reduce in a pair of ranks (`new_group`:
{0, 1}, {2, 3}, ...), started asynchronously and waited on after the optimizer step, and a
`barrier` at the end of the step. Each rank is traced by the PyTorch profiler.

    python3 dp_bookkeeping.py OUTDIR WORLD [compiled]

Writes OUTDIR/dp<WORLD>-bookkeeping/rank<R>.json.gz (a job folder: one trace per rank) and
OUTDIR/dp<WORLD>-bookkeeping.timing.json (rank 0's steps timed without the profiler, between
barriers). One intra-op thread per process. `compiled`: the DDP model under `torch.compile`
(TorchDynamo's DDP optimizer splits the graph at the gradient buckets), in
`dp<WORLD>-bookkeeping-compiled/`.
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
TIMED_STEPS = 20
WIDTH = 512
LAYERS = 4
BATCH = 32


def run(rank, world, outdir, compiled=False):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29601"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    # Every rank creates every group, in the same order (torch.distributed requires it).
    pairs = [dist.new_group([p, p + 1]) for p in range(0, world, 2)]
    pair = pairs[rank // 2]
    torch.manual_seed(0)
    layers = []
    for _ in range(LAYERS):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    model = DDP(nn.Sequential(*layers))
    if compiled:
        model = torch.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    torch.manual_seed(1000 + rank)
    x = torch.randn(BATCH, WIDTH)
    y = torch.randn(BATCH, WIDTH)
    lr = torch.tensor([1e-3])
    seed = torch.randn(16)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        pending = dist.all_reduce(seed, group=pair, async_op=True)
        opt.step()
        pending.wait()
        logged = loss.detach().clone()
        dist.all_reduce(logged)
        dist.broadcast(lr, src=0)
        metrics = [None] * world
        dist.all_gather_object(metrics, {"rank": rank, "loss": float(logged)})
        gathered = [torch.zeros(2) for _ in range(world)] if rank == 0 else None
        dist.gather(torch.tensor([float(rank), float(logged)]), gathered, dst=0)
        dist.reduce(logged, dst=0)
        dist.barrier()

    for _ in range(5):
        step()
    dist.barrier()
    name = f"dp{world}-bookkeeping" + ("-compiled" if compiled else "")
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
    extra = sys.argv[3:]
    if len(sys.argv) < 3 or int(sys.argv[2]) % 2 or extra not in ([], ["compiled"]):
        sys.exit("usage: dp_bookkeeping.py OUTDIR WORLD [compiled] (an even number of ranks)")
    outdir, world = sys.argv[1], int(sys.argv[2])
    os.makedirs(outdir, exist_ok=True)
    mp.spawn(run, args=(world, outdir, extra == ["compiled"]), nprocs=world)
