"""Records a CPU job of EP x DP processes with expert parallelism: a mixture-of-experts model
whose experts are sharded over an expert-parallel group of EP ranks and replicated over DP
such groups, trained on gloo; each rank is traced by the PyTorch profiler.

    python3 moe_ep.py OUTDIR EP DP [token]

Each of BLOCKS blocks is a dense layer (replicated on every rank) followed by a mixture of
EXPERTS_PER_RANK * EP experts with expert-choice routing (Zhou et al., 2022: each expert takes
the CAPACITY tokens of each rank that score highest for it, so every exchange has equal
splits). The tokens an expert takes are sent to the rank holding it by one
`all_to_all_single` over the EP group, the experts' outputs come back by a second one, and the
backward runs both exchanges again in reverse. After the backward the dense layers' gradients
are all-reduced over the whole world and each expert's over the DP ranks holding the same
expert (what DeepSpeed-MoE and Megatron call the expert-data-parallel group).

With `token`, the routing is token choice instead (Switch Transformer's top-1 with a capacity,
as GShard and Megatron's all-to-all dispatcher do): each token goes to the expert that scores
it highest, an expert keeps at most TOKEN_CAPACITY of a rank's tokens (the rest are dropped),
the counts are exchanged first (an `all_to_all_single` of EXPERTS_PER_RANK * EP counts), then
the tokens with uneven splits, each rank sending as many as its router chose: the exchanges'
sizes differ from rank to rank and step to step. Writes OUTDIR/ep<EP>dp<DP>-token/.

Ranks are laid out EP-major: rank = replica * EP + expert_rank, so the EP groups are
{0..EP-1}, {EP..2EP-1}, ... and the expert-data-parallel groups {0, EP, 2EP, ...},
{1, EP+1, ...}. Writes OUTDIR/ep<EP>dp<DP>/rank<R>.json.gz (a job folder: one trace per rank)
and OUTDIR/ep<EP>dp<DP>.timing.json (rank 0's steps timed without the profiler, between
barriers). One intra-op thread per process: the shared 2-core machine runs EP x DP of them.
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
WIDTH = 256
HIDDEN = 1024
BLOCKS = 2
EXPERTS_PER_RANK = 2
TOKENS = 64
CAPACITY = 16
TOKEN_CAPACITY = 20


class AllToAll(torch.autograd.Function):
    """Sends equal slices of the rows to each rank of the group; the backward sends the
    gradients back the same way."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        out = torch.empty_like(x)
        dist.all_to_all_single(out, x.contiguous(), group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        out = torch.empty_like(grad)
        dist.all_to_all_single(out, grad.contiguous(), group=ctx.group)
        return out, None


class AllToAllUneven(torch.autograd.Function):
    """Sends `sent[r]` rows to rank r of the group and receives `received[r]` from it; the
    backward sends the gradients back the same way."""

    @staticmethod
    def forward(ctx, x, sent, received, group):
        ctx.sent, ctx.received, ctx.group = sent, received, group
        out = x.new_empty(sum(received), x.shape[1])
        dist.all_to_all_single(out, x.contiguous(), received, sent, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        out = grad.new_empty(sum(ctx.sent), grad.shape[1])
        dist.all_to_all_single(out, grad.contiguous(), ctx.sent, ctx.received, group=ctx.group)
        return out, None, None, None


class Expert(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(WIDTH, HIDDEN)
        self.down = nn.Linear(HIDDEN, WIDTH)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class MoeBlock(nn.Module):
    def __init__(self, ep, group, token_choice=False):
        super().__init__()
        self.ep, self.group, self.token_choice = ep, group, token_choice
        self.dense = nn.Linear(WIDTH, WIDTH)
        self.router = nn.Linear(WIDTH, EXPERTS_PER_RANK * ep, bias=False)
        self.experts = nn.ModuleList(Expert() for _ in range(EXPERTS_PER_RANK))

    def forward(self, x):
        x = x + F.gelu(self.dense(x))
        if self.token_choice:
            return x + self.token_choice_experts(x)
        scores = self.router(x).softmax(dim=-1)  # tokens x experts
        gate, index = scores.t().topk(CAPACITY, dim=-1)  # experts x capacity
        sent = x[index.reshape(-1)]  # (experts * capacity) x width, grouped by expert's rank
        received = AllToAll.apply(sent, self.group)
        # From each of the EP ranks: its CAPACITY tokens for each of this rank's experts.
        received = received.view(self.ep, EXPERTS_PER_RANK, CAPACITY, WIDTH)
        outputs = torch.stack(
            [expert(received[:, e].reshape(-1, WIDTH)) for e, expert in enumerate(self.experts)],
            dim=1,
        ).view(self.ep, EXPERTS_PER_RANK, CAPACITY, WIDTH)
        returned = AllToAll.apply(outputs.reshape(-1, WIDTH), self.group)
        weighted = returned * gate.reshape(-1, 1)
        return x + torch.zeros_like(x).index_add(0, index.reshape(-1), weighted)

    def token_choice_experts(self, x):
        gate, choice = self.router(x).softmax(dim=-1).max(dim=-1)
        kept, counts = [], []
        for e in range(EXPERTS_PER_RANK * self.ep):
            tokens = (choice == e).nonzero().squeeze(1)
            tokens = tokens[gate[tokens].argsort(descending=True)][:TOKEN_CAPACITY]
            kept.append(tokens)
            counts.append(len(tokens))
        index = torch.cat(kept)
        # Rank r receives, from each rank, the counts for its experts, then the tokens.
        incoming = torch.empty(len(counts), dtype=torch.int64)
        dist.all_to_all_single(incoming, torch.tensor(counts), group=self.group)
        incoming = incoming.view(self.ep, EXPERTS_PER_RANK)
        sent = [sum(counts[r * EXPERTS_PER_RANK : (r + 1) * EXPERTS_PER_RANK]) for r in range(self.ep)]
        received = incoming.sum(dim=1).tolist()
        tokens = AllToAllUneven.apply(x[index], sent, received, self.group)
        chunks = tokens.split(incoming.reshape(-1).tolist())  # by (source rank, local expert)
        outputs = torch.cat(
            [self.experts[k % EXPERTS_PER_RANK](chunk) for k, chunk in enumerate(chunks)]
        )
        returned = AllToAllUneven.apply(outputs, received, sent, self.group)
        return torch.zeros_like(x).index_add(0, index, returned * gate[index].unsqueeze(1))


def run(rank, ep, dp, outdir, token_choice=False):
    world = ep * dp
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29591"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    replica, expert_rank = rank // ep, rank % ep
    # Every rank creates every group, in the same order (torch.distributed requires it).
    ep_groups = [dist.new_group(list(range(r * ep, (r + 1) * ep))) for r in range(dp)]
    expert_dp_groups = [dist.new_group(list(range(e, world, ep))) for e in range(ep)]
    ep_group = ep_groups[replica]
    expert_dp_group = expert_dp_groups[expert_rank]
    torch.manual_seed(0)
    blocks = nn.ModuleList(MoeBlock(ep, ep_group, token_choice) for _ in range(BLOCKS))
    head = nn.Linear(WIDTH, WIDTH)
    torch.manual_seed(1 + expert_rank)
    for block in blocks:
        for expert in block.experts:
            for p in expert.parameters():
                nn.init.normal_(p, std=0.02)
    expert_params = [p for b in blocks for p in b.experts.parameters()]
    expert_ids = {id(p) for p in expert_params}
    dense_params = [
        p for p in list(blocks.parameters()) + list(head.parameters()) if id(p) not in expert_ids
    ]
    opt = torch.optim.SGD(dense_params + expert_params, lr=1e-3, momentum=0.9)
    torch.manual_seed(1000 + rank)
    x = torch.randn(TOKENS, WIDTH)
    y = torch.randn(TOKENS, WIDTH)

    def all_reduce_grads(params, group, size):
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        dist.all_reduce(flat, group=group)
        flat /= size
        offset = 0
        for p in params:
            p.grad.copy_(flat[offset : offset + p.numel()].view_as(p))
            offset += p.numel()

    def step():
        opt.zero_grad(set_to_none=True)
        h = x
        for block in blocks:
            h = block(h)
        F.mse_loss(head(h), y).backward()
        all_reduce_grads(dense_params, None, world)
        all_reduce_grads(expert_params, expert_dp_group, dp)
        opt.step()

    for _ in range(5):
        step()
    dist.barrier()
    name = f"ep{ep}dp{dp}" + ("-token" if token_choice else "")
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
    if len(sys.argv) not in (4, 5) or sys.argv[4:] not in ([], ["token"]):
        sys.exit("usage: moe_ep.py OUTDIR EP DP [token]")
    outdir, ep, dp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    token_choice = sys.argv[4:] == ["token"]
    os.makedirs(outdir, exist_ok=True)
    mp.spawn(run, args=(ep, dp, outdir, token_choice), nprocs=ep * dp)
