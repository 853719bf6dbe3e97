"""Records a CPU job of fully sharded data parallel training with the first FSDP
(`FullyShardedDataParallel`, the wrapper Hugging Face Accelerate and many training scripts
still use) over gloo: a stack of linear layers, each layer its own FSDP unit
(`ModuleWrapPolicy`), its parameters flattened and sharded over a SHARD group of ranks, and
with REPLICATE > 1 `ShardingStrategy.HYBRID_SHARD` on a (REPLICATE, SHARD) device mesh: the
shards replicated over groups of REPLICATE ranks, whose gradient shards are all-reduced;
with REPLICATE = 1 `FULL_SHARD` over the world. Each rank is traced by the PyTorch profiler.

    python3 fsdp1.py OUTDIR SHARD REPLICATE

Writes OUTDIR/fsdp1-<SHARD>x<REPLICATE>/rank<R>.json.gz (one trace per rank) and
OUTDIR/fsdp1-<SHARD>x<REPLICATE>.timing.json (rank 0's steps timed without the profiler,
between barriers). rank = replica * SHARD + shard: the shard groups are consecutive ranks.
One intra-op thread per process.
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
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy
from torch.distributed.fsdp.wrap import ModuleWrapPolicy

SCHEDULE = dict(wait=2, warmup=3, active=6)
TIMED_STEPS = 20
WIDTH = 512
LAYERS = 6
BATCH = 32


def run(rank, shard, replicate, outdir):
    world = shard * replicate
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29631"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(WIDTH, WIDTH) for _ in range(LAYERS)])
    common = dict(
        auto_wrap_policy=ModuleWrapPolicy({nn.Linear}),
        device_id=torch.device("cpu"),
        use_orig_params=True,
    )
    if replicate > 1:
        mesh = init_device_mesh("cpu", (replicate, shard), mesh_dim_names=("replicate", "shard"))
        model = FSDP(
            model, device_mesh=mesh, sharding_strategy=ShardingStrategy.HYBRID_SHARD, **common
        )
    else:
        model = FSDP(model, sharding_strategy=ShardingStrategy.FULL_SHARD, **common)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    torch.manual_seed(1000 + rank)
    x = torch.randn(BATCH, WIDTH)
    y = torch.randn(BATCH, WIDTH)

    def step():
        opt.zero_grad(set_to_none=True)
        F.mse_loss(model(x), y).backward()
        opt.step()

    for _ in range(5):
        step()
    dist.barrier()
    name = f"fsdp1-{shard}x{replicate}"
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
        sys.exit("usage: fsdp1.py OUTDIR SHARD REPLICATE")
    outdir, shard, replicate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.makedirs(outdir, exist_ok=True)
    mp.spawn(run, args=(shard, replicate, outdir), nprocs=shard * replicate)
