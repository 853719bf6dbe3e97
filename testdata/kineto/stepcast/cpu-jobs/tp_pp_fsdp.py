"""Records a CPU job of three-dimensional parallelism as torchtitan trains: a 3-D device mesh
(pp, dp, tp), tensor parallelism by DTensor over `tp` (`tp_fsdp_dtensor.py`'s blocks:
`SequenceParallel` norm, `ColwiseParallel` up, `RowwiseParallel` down), FSDP2 over `dp`, and a
pipeline over `pp` (`torch.distributed.pipelining`, `Schedule1F1B`, four microbatches), each
stage two blocks. Every collective and transfer runs on gloo, in the process group of its mesh
dimension; each rank is traced by the PyTorch profiler.

    python3 tp_pp_fsdp.py OUTDIR TP PP DP

rank = (pp_index * DP + dp_index) * TP + tp_index: the TP groups are consecutive ranks. Writes
OUTDIR/tp<TP>pp<PP>dp<DP>-titan/rank<R>.json.gz (a job folder: one trace per rank) and
OUTDIR/tp<TP>pp<PP>dp<DP>-titan.timing.json (rank 0's steps timed without the profiler,
between barriers). One intra-op thread per process.
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
from torch.distributed.pipelining import PipelineStage, Schedule1F1B
from torch.distributed.tensor import Shard
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
BLOCKS_PER_STAGE = 2
MICROBATCHES = 4
MICROBATCH = 4
SEQUENCE = 16


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.up = nn.Linear(WIDTH, HIDDEN)
        self.down = nn.Linear(HIDDEN, WIDTH)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


def run(rank, tp, pp, dp, outdir):
    world = tp * pp * dp
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29611"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (pp, dp, tp), mesh_dim_names=("pp", "dp", "tp"))
    stage_index = mesh["pp"].get_local_rank()
    torch.manual_seed(stage_index)
    module = nn.Sequential(*[Block() for _ in range(BLOCKS_PER_STAGE)])
    for block in module:
        parallelize_module(
            block,
            mesh["tp"],
            {
                "norm": SequenceParallel(),
                "up": ColwiseParallel(input_layouts=Shard(1)),
                "down": RowwiseParallel(output_layouts=Shard(1)),
            },
        )
        fully_shard(block, mesh=mesh["dp"], reshard_after_forward=False)
    fully_shard(module, mesh=mesh["dp"], reshard_after_forward=False)
    stage = PipelineStage(
        module, stage_index, pp, torch.device("cpu"), group=mesh["pp"].get_group()
    )
    schedule = Schedule1F1B(stage, MICROBATCHES, loss_fn=F.mse_loss)
    opt = torch.optim.AdamW(module.parameters(), lr=1e-3, foreach=True)
    torch.manual_seed(1000 + mesh["dp"].get_local_rank())
    shard = SEQUENCE // tp
    tp_rank = mesh["tp"].get_local_rank()
    x = torch.randn(MICROBATCHES * MICROBATCH, SEQUENCE, WIDTH)
    y = torch.randn(MICROBATCHES * MICROBATCH, SEQUENCE, WIDTH)
    x = x[:, tp_rank * shard : (tp_rank + 1) * shard].contiguous()
    y = y[:, tp_rank * shard : (tp_rank + 1) * shard].contiguous()

    def step():
        opt.zero_grad(set_to_none=True)
        if stage.is_first:
            schedule.step(x)
        elif stage.is_last:
            schedule.step(target=y)
        else:
            schedule.step()
        opt.step()

    for _ in range(5):
        step()
    dist.barrier()
    name = f"tp{tp}pp{pp}dp{dp}-titan"
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
        sys.exit("usage: tp_pp_fsdp.py OUTDIR TP PP DP")
    outdir, tp, pp, dp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    os.makedirs(outdir, exist_ok=True)
    mp.spawn(run, args=(tp, pp, dp, outdir), nprocs=tp * pp * dp)
