"""Records a CPU job of pipeline parallelism as `torch.distributed.pipelining` runs it: a stack
of linear layers split into PP stages (`PipelineStage`), MICROBATCHES microbatches a step on
the 1F1B schedule (`Schedule1F1B`: each stage alternates one forward and one backward once the
pipeline is full), activations and their gradients passed between neighbouring stages by the
schedule's own batched point-to-point ops, each stage replicated over DP ranks by
`DistributedDataParallel` (gradients all-reduced after the last microbatch). Every collective
and transfer runs on gloo, in the process group of its mesh dimension; each rank is traced by
the PyTorch profiler.

    python3 pipelining_dp.py OUTDIR PP DP [interleaved|zero-bubble] [fsdp]

The mesh is (PP, DP), rank = stage * DP + replica: the DP groups are consecutive ranks and a
replica's pipeline is {replica, DP + replica, ...}. Writes OUTDIR/pipelining-pp<PP>dp<DP>/rank<R>.json.gz
(a job folder: one trace per rank) and OUTDIR/pipelining-pp<PP>dp<DP>.timing.json (rank 0's
steps timed without the profiler, between barriers). One intra-op thread per process.

`interleaved`: `ScheduleInterleaved1F1B` with two stages a rank (virtual stages: rank i of the
pipeline holds stages i and PP + i, so the last rank's activations go back to the first);
`zero-bubble`: `ScheduleInterleavedZeroBubble`, the same two stages a rank, each backward split
into its input's gradient and, later, its weights' (folder `pipelining-zero-bubble-...`);
`fsdp`: each stage sharded by FSDP2 (`fully_shard`, gradients reduce-scattered) over the `dp`
group instead of DDP, as torchtitan trains with pipelining. The folder's name then says so
(`pipelining-interleaved-pp2dp2-fsdp`).
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
from torch.distributed.fsdp import fully_shard
from torch.distributed.pipelining import (
    PipelineStage,
    Schedule1F1B,
    ScheduleInterleaved1F1B,
    ScheduleInterleavedZeroBubble,
)
from torch.nn.parallel import DistributedDataParallel as DDP

SCHEDULE = dict(wait=2, warmup=3, active=6)
TIMED_STEPS = 20
WIDTH = 512
LAYERS_PER_STAGE = 3
MICROBATCHES = 4
MICROBATCH = 16


def run(rank, pp, dp, outdir, interleaved=False, fsdp=False, zero_bubble=False):
    world = pp * dp
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29591"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (pp, dp), mesh_dim_names=("pp", "dp"))
    pp_rank = mesh["pp"].get_local_rank()
    replica = mesh["dp"].get_local_rank()
    stages_per_rank = 2 if interleaved or zero_bubble else 1
    num_stages = pp * stages_per_rank
    stages, modules = [], []
    for virtual in range(stages_per_rank):
        stage_index = pp_rank + virtual * pp
        torch.manual_seed(stage_index)
        layers = []
        for _ in range(LAYERS_PER_STAGE):
            layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
        module = nn.Sequential(*layers)
        if fsdp:
            fully_shard(module, mesh=mesh["dp"], reshard_after_forward=False)
        else:
            # `static_graph`: with three or more microbatches' forwards before their
            # backwards (1F1B's warm-up on four stages) DDP's bucket rebuild fails an
            # internal assert in torch 2.15.
            module = DDP(module, process_group=mesh["dp"].get_group(), static_graph=True)
        modules.append(module)
        stages.append(
            PipelineStage(
                module, stage_index, num_stages, torch.device("cpu"), group=mesh["pp"].get_group()
            )
        )
    if zero_bubble:
        schedule = ScheduleInterleavedZeroBubble(stages, MICROBATCHES, loss_fn=F.mse_loss)
    elif interleaved:
        schedule = ScheduleInterleaved1F1B(stages, MICROBATCHES, loss_fn=F.mse_loss)
    else:
        schedule = Schedule1F1B(stages[0], MICROBATCHES, loss_fn=F.mse_loss)
    params = [p for m in modules for p in m.parameters()]
    opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    torch.manual_seed(1000 + replica)
    x = torch.randn(MICROBATCHES * MICROBATCH, WIDTH)
    y = torch.randn(MICROBATCHES * MICROBATCH, WIDTH)
    first = any(s.is_first for s in stages)
    last = any(s.is_last for s in stages)

    def step():
        opt.zero_grad(set_to_none=True)
        schedule.step(*([x] if first else []), **({"target": y} if last else {}))
        opt.step()

    for _ in range(5):
        step()
    dist.barrier()
    name = (
        "pipelining-"
        + ("interleaved-" if interleaved else "")
        + ("zero-bubble-" if zero_bubble else "")
        + f"pp{pp}dp{dp}"
        + ("-fsdp" if fsdp else "")
    )
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
    options = {"interleaved", "zero-bubble", "fsdp"}
    extra = sys.argv[4:]
    schedules = {"interleaved", "zero-bubble"}.intersection(extra)
    if len(sys.argv) < 4 or any(a not in options for a in extra) or len(schedules) > 1:
        sys.exit("usage: pipelining_dp.py OUTDIR PP DP [interleaved|zero-bubble] [fsdp]")
    outdir, pp, dp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.makedirs(outdir, exist_ok=True)
    args = (pp, dp, outdir, "interleaved" in extra, "fsdp" in extra, "zero-bubble" in extra)
    mp.spawn(run, args=args, nprocs=pp * dp)
