"""Records a CPU job of pipeline parallelism as `torch.distributed.pipelining` runs it: a stack
of linear layers split into PP stages (`PipelineStage`), MICROBATCHES microbatches a step on
the 1F1B schedule (`Schedule1F1B`: each stage alternates one forward and one backward once the
pipeline is full), activations and their gradients passed between neighbouring stages by the
schedule's own batched point-to-point ops, each stage replicated over DP ranks by
`DistributedDataParallel` (gradients all-reduced after the last microbatch). Every collective
and transfer runs on gloo, in the process group of its mesh dimension; each rank is traced by
the PyTorch profiler.

    python3 pipelining_dp.py OUTDIR PP DP

The mesh is (PP, DP), rank = stage * DP + replica: the DP groups are consecutive ranks and a
replica's pipeline is {replica, DP + replica, ...}. Writes OUTDIR/pipelining-pp<PP>dp<DP>/rank<R>.json.gz
(a job folder: one trace per rank) and OUTDIR/pipelining-pp<PP>dp<DP>.timing.json (rank 0's
steps timed without the profiler, between barriers). One intra-op thread per process.
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
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.pipelining import PipelineStage, Schedule1F1B
from torch.nn.parallel import DistributedDataParallel as DDP

SCHEDULE = dict(wait=2, warmup=3, active=6)
TIMED_STEPS = 20
WIDTH = 512
LAYERS_PER_STAGE = 3
MICROBATCHES = 4
MICROBATCH = 16


def run(rank, pp, dp, outdir):
    world = pp * dp
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29591"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (pp, dp), mesh_dim_names=("pp", "dp"))
    stage_index = mesh["pp"].get_local_rank()
    replica = mesh["dp"].get_local_rank()
    torch.manual_seed(stage_index)
    layers = []
    for _ in range(LAYERS_PER_STAGE):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    # `static_graph`: with three or more microbatches' forwards before their backwards (1F1B's
    # warm-up on four stages) DDP's bucket rebuild fails an internal assert in torch 2.15.
    module = DDP(
        nn.Sequential(*layers), process_group=mesh["dp"].get_group(), static_graph=True
    )
    stage = PipelineStage(
        module, stage_index, pp, torch.device("cpu"), group=mesh["pp"].get_group()
    )
    schedule = Schedule1F1B(stage, MICROBATCHES, loss_fn=F.mse_loss)
    opt = torch.optim.SGD(module.parameters(), lr=1e-3, momentum=0.9)
    torch.manual_seed(1000 + replica)
    x = torch.randn(MICROBATCHES * MICROBATCH, WIDTH)
    y = torch.randn(MICROBATCHES * MICROBATCH, WIDTH)

    def step():
        opt.zero_grad(set_to_none=True)
        if stage_index == 0:
            schedule.step(x)
        elif stage_index == pp - 1:
            schedule.step(target=y)
        else:
            schedule.step()
        opt.step()

    for _ in range(5):
        step()
    dist.barrier()
    name = f"pipelining-pp{pp}dp{dp}"
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
    if len(sys.argv) != 4:
        sys.exit("usage: pipelining_dp.py OUTDIR PP DP")
    outdir, pp, dp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.makedirs(outdir, exist_ok=True)
    mp.spawn(run, args=(pp, dp, outdir), nprocs=pp * dp)
