"""Records a CPU job of TP x PP x DP processes, the three kinds of parallelism at once: a
pipeline of PP stages, each stage BLOCKS of `tp_dp.py`'s Megatron-style MLP blocks split over a
tensor-parallel group of TP ranks, fed MICROBATCHES microbatches per step GPipe-style with the
activations and their gradients passed between neighbouring stages by `dist.send`/`dist.recv`
(each TP rank to the same TP rank of the next stage), replicated over data-parallel groups of
DP ranks (each parameter's gradient all-reduced over its DP group after the last microbatch).
Every collective and transfer runs on gloo; each rank is traced by the PyTorch profiler.

    python3 tp_pp_dp.py OUTDIR TP PP DP

Ranks are laid out as Megatron-LM does: rank = (stage * DP + replica) * TP + tp_index, so the
TP groups are consecutive ranks, a DP group is the ranks of one stage and one TP index, and a
stage's next stage is TP * DP ranks on. Writes OUTDIR/tp<TP>pp<PP>dp<DP>/rank<R>.json.gz (a
job folder: one trace per rank) and OUTDIR/tp<TP>pp<PP>dp<DP>.timing.json (rank 0's steps
timed without the profiler, between barriers). One intra-op thread per process: the shared
2-core machine runs TP x PP x DP of them.
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

from tp_dp import WIDTH, ParallelBlock

SCHEDULE = dict(wait=2, warmup=3, active=6)
TIMED_STEPS = 20
BLOCKS = 2
MICROBATCHES = 4
MICROBATCH = 16


def run(rank, tp, pp, dp, outdir):
    world = tp * pp * dp
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29571"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    tp_index = rank % tp
    replica = (rank // tp) % dp
    stage = rank // (tp * dp)
    # Every rank creates every group, in the same order (torch.distributed requires it).
    tp_groups = [dist.new_group(list(range(g * tp, (g + 1) * tp))) for g in range(pp * dp)]
    dp_groups = [
        dist.new_group([(s * dp + d) * tp + t for d in range(dp)])
        for s in range(pp)
        for t in range(tp)
    ]
    tp_group = tp_groups[stage * dp + replica]
    dp_group = dp_groups[stage * tp + tp_index]
    previous = rank - tp * dp if stage > 0 else None
    following = rank + tp * dp if stage < pp - 1 else None
    torch.manual_seed(stage * tp + tp_index)
    model = nn.Sequential(*[ParallelBlock(tp, tp_group) for _ in range(BLOCKS)])
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
    name = f"tp{tp}pp{pp}dp{dp}"
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
    if len(sys.argv) != 5:
        sys.exit("usage: tp_pp_dp.py OUTDIR TP PP DP")
    outdir, tp, pp, dp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    os.makedirs(outdir, exist_ok=True)
    mp.spawn(run, args=(tp, pp, dp, outdir), nprocs=tp * pp * dp)
