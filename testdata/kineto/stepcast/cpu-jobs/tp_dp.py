"""Records a CPU job of TP x DP processes with real process subgroups: a two-layer MLP block
split Megatron-style over a tensor-parallel group of TP ranks (the first layer's columns and
the second layer's rows; an all-reduce over the TP group ends the forward of every block and
another starts the backward of its input), replicated over data-parallel groups of DP ranks
(DistributedDataParallel over the DP group all-reduces each rank's shard of the gradients).
Every collective runs on gloo, in the subgroup it belongs to; each rank is traced by the
PyTorch profiler.

    python3 tp_dp.py OUTDIR TP DP [dp-major] [opt=adam-loop|adam-fused]

Ranks are laid out TP-major: rank = dp_index * TP + tp_index, so the TP groups are
{0..TP-1}, {TP..2TP-1}, ... and the DP groups {0, TP, 2TP, ...}, {1, TP+1, ...}; with
`dp-major`, rank = tp_index * DP + dp_index (the DP groups are the consecutive ranks). Writes
OUTDIR/tp<TP>dp<DP>[-dp-major]/rank<R>.json.gz (a job folder: one trace per rank) and
OUTDIR/tp<TP>dp<DP>[-dp-major].timing.json (rank 0's steps timed without the profiler,
between barriers). One intra-op thread per process: the shared 2-core machine runs TP x DP of
them. The optimizer is SGD with momentum unless `opt=` names another (Adam with its
per-parameter loop, `foreach=False`, or `fused=True`; the folder's name then ends in `-OPT`):
the one change of a job-level before/after pair (`../cpu-job-pairs/`).
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
HIDDEN = 2048
BLOCKS = 4
BATCH = 32


class ReduceForward(torch.autograd.Function):
    """Megatron's `g`: all-reduce over the TP group in forward, identity in backward."""

    @staticmethod
    def forward(ctx, x, group):
        x = x.clone()
        dist.all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class ReduceBackward(torch.autograd.Function):
    """Megatron's `f`: identity in forward, all-reduce over the TP group in backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class ParallelBlock(nn.Module):
    def __init__(self, tp, group):
        super().__init__()
        self.group = group
        self.up = nn.Linear(WIDTH, HIDDEN // tp)
        self.down = nn.Linear(HIDDEN // tp, WIDTH, bias=False)

    def forward(self, x):
        h = F.gelu(self.up(ReduceBackward.apply(x, self.group)))
        return x + ReduceForward.apply(self.down(h), self.group)


OPTIMIZERS = {
    "sgd": lambda params: torch.optim.SGD(params, lr=1e-3, momentum=0.9),
    "adam-loop": lambda params: torch.optim.Adam(params, lr=1e-3, foreach=False),
    "adam-fused": lambda params: torch.optim.Adam(params, lr=1e-3, fused=True),
}


def run(rank, tp, dp, outdir, dp_major, opt_name="sgd"):
    world = tp * dp
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29561"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    # Every rank creates every group, in the same order (torch.distributed requires it).
    if dp_major:
        tp_index, dp_index = rank // dp, rank % dp
        tp_groups = [dist.new_group(list(range(d, world, dp))) for d in range(dp)]
        dp_groups = [dist.new_group(list(range(t * dp, (t + 1) * dp))) for t in range(tp)]
    else:
        tp_index, dp_index = rank % tp, rank // tp
        tp_groups = [dist.new_group(list(range(d * tp, (d + 1) * tp))) for d in range(dp)]
        dp_groups = [dist.new_group(list(range(t, world, tp))) for t in range(tp)]
    tp_group = tp_groups[dp_index]
    dp_group = dp_groups[tp_index]
    torch.manual_seed(tp_index)
    model = nn.Sequential(*[ParallelBlock(tp, tp_group) for _ in range(BLOCKS)])
    model = DDP(model, process_group=dp_group)
    opt = OPTIMIZERS[opt_name](model.parameters())
    torch.manual_seed(1000 + dp_index)
    x = torch.randn(BATCH, WIDTH)
    y = torch.randn(BATCH, WIDTH)

    def step():
        opt.zero_grad(set_to_none=True)
        F.mse_loss(model(x), y).backward()
        opt.step()

    for _ in range(5):
        step()
    dist.barrier()
    name = f"tp{tp}dp{dp}" + ("-dp-major" if dp_major else "")
    if opt_name != "sgd":
        name += f"-{opt_name}"
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
    outdir, tp, dp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    extra = sys.argv[4:]
    dp_major = "dp-major" in extra
    opts = [a.removeprefix("opt=") for a in extra if a.startswith("opt=")]
    opt_name = opts[0] if opts else "sgd"
    if opt_name not in OPTIMIZERS or len(extra) != int(dp_major) + len(opts):
        sys.exit(f"usage: tp_dp.py OUTDIR TP DP [dp-major] [opt={'|'.join(OPTIMIZERS)}]")
    os.makedirs(outdir, exist_ok=True)
    mp.spawn(run, args=(tp, dp, outdir, dp_major, opt_name), nprocs=tp * dp)
