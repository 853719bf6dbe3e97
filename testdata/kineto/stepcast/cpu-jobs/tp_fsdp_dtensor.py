"""Records a CPU job trained the way PyTorch's own 2-D parallel recipe trains (its "TP + FSDP"
tutorial): tensor parallelism by DTensor (`parallelize_module`, `ColwiseParallel` then
`RowwiseParallel` in each feed-forward block, `SequenceParallel` for its layer norm) over the
"tp" dimension of a 2-D device mesh, and FSDP2 (`fully_shard`) over its "dp" dimension. Every
collective is issued by DTensor or FSDP2 (functional collectives and c10d ops), in the process
group of its mesh dimension, on gloo; each rank is traced by the PyTorch profiler.

    python3 tp_fsdp_dtensor.py OUTDIR TP DP

The mesh is (DP, TP), rank = dp_index * TP + tp_index: the TP groups are consecutive ranks.
Writes OUTDIR/dtensor-tp<TP>dp<DP>/rank<R>.json.gz (a job folder: one trace per rank) and
OUTDIR/dtensor-tp<TP>dp<DP>.timing.json (rank 0's steps timed without the profiler, between
barriers). One intra-op thread per process.
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
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)

SCHEDULE = dict(wait=2, warmup=3, active=6)
TIMED_STEPS = 20
WIDTH = 256
HIDDEN = 1024
BLOCKS = 3
BATCH = 8
SEQUENCE = 16


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.up = nn.Linear(WIDTH, HIDDEN)
        self.down = nn.Linear(HIDDEN, WIDTH)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


def run(rank, tp, dp, outdir):
    world = tp * dp
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29571"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (dp, tp), mesh_dim_names=("dp", "tp"))
    torch.manual_seed(0)
    model = nn.Sequential(*[Block() for _ in range(BLOCKS)])
    for block in model:
        parallelize_module(
            block,
            mesh["tp"],
            {
                # The block's input arrives sharded along the sequence; the norm runs on the
                # shard, `up` gathers the sequence and splits its columns, `down` reduces its
                # rows and scatters the sequence again (Megatron's sequence parallelism).
                "norm": SequenceParallel(),
                "up": ColwiseParallel(input_layouts=Shard(1)),
                "down": RowwiseParallel(output_layouts=Shard(1)),
            },
        )
        fully_shard(block, mesh=mesh["dp"])
    fully_shard(model, mesh=mesh["dp"])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    torch.manual_seed(1000 + mesh["dp"].get_local_rank())
    x = torch.randn(BATCH, SEQUENCE, WIDTH)
    y = torch.randn(BATCH, SEQUENCE, WIDTH)
    tp_rank = mesh["tp"].get_local_rank()
    shard = SEQUENCE // tp
    x_local = x[:, tp_rank * shard : (tp_rank + 1) * shard].contiguous()
    y_local = y[:, tp_rank * shard : (tp_rank + 1) * shard].contiguous()

    def step():
        opt.zero_grad(set_to_none=True)
        F.mse_loss(model(x_local), y_local).backward()
        opt.step()

    for _ in range(5):
        step()
    dist.barrier()
    name = f"dtensor-tp{tp}dp{dp}"
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
        sys.exit("usage: tp_fsdp_dtensor.py OUTDIR TP DP")
    outdir, tp, dp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.makedirs(outdir, exist_ok=True)
    mp.spawn(run, args=(tp, dp, outdir), nprocs=tp * dp)
