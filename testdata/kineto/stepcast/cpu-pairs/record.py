"""Records the before/after pairs beside this script on this machine's CPU: one workload, one
change, both traced with the PyTorch profiler (Kineto, CPU activity only), so a what-if
predicted from BEFORE can be checked against AFTER as measured.

    python3 record.py OUTDIR WORKLOAD [VARIANT ...]
    python3 record.py OUTDIR ddp              # spawns the two gloo ranks itself
    python3 record.py OUTDIR ddp4             # four ranks sharing the cores (ddp-gloo4/)
    python3 record.py OUTDIR ddp-transformer  # `ddp` of another workload (`transformer`, `cnn`, `gpt`)
    python3 record.py OUTDIR mlp base checkpoint   # activation checkpointing (../cpu-recompute-pairs/)
    python3 record.py OUTDIR gpt base checkpoint reentrant   # a tiny GPT, non-reentrant and reentrant checkpointing
    python3 record.py OUTDIR resmlp base checkpoint   # a residual MLP, each block checkpointed
    python3 record.py OUTDIR bigcnn base gist   # activations stashed in 16 bits (../cpu-gist-pairs/)
    python3 record.py OUTDIR cnn base bnfused   # batch norm fused with its ReLU (../cpu-batchnorm-pairs/)
    python3 record.py OUTDIR cnn base bnrelu    # the same, as one hand-fused function
    python3 record.py OUTDIR midcnn base bnrelu # the same at batch 16 (cnn64: at 64 × 64)

A configuration is `<workload>-<variant>`; a pair is two variants of one workload that differ
by exactly one change (README.md beside this script lists them and their bars). Modeled on
`../h100-pairs/record.py`, with what a shared 2-core CPU needs:

- Every variant of a workload is built in one process (each with a fresh model, seed 0) and
  warmed up; each is then traced alone: `torch.profiler` with schedule wait 2 / warmup 3 /
  active 6 and `record_shapes=True` (OUTDIR/<workload>-<variant>.json.gz, gzipped unchanged).
- Then the variants are timed with the profiler off, **interleaved**: ROUNDS rounds, each
  running every variant once (the order rotated each round), each run being a few untimed
  steps (a loader's prefetched batches used up) and then TIMED_STEPS steps timed by the wall
  clock. Other processes share this machine's two cores, so interleaving makes their load fall
  on BEFORE and AFTER alike. OUTDIR/<config>.timing.json: every round's mean step, and their
  min / median / max (`median_ms`: the outcome a user gets).

Threads: every variant runs with `torch.set_num_threads(1)` except the `threads2` variants
(2, the machine's cores), so a pair differs by its one change only. A thread-count pair
(`threads1` → `threads2`, `threads1` being the same program as `base`) runs in a process of its
own: after a round on two threads, OpenMP's idle thread keeps spinning for a while and slowed
the next variant's round in the first recording. The `ddp` workload runs
two processes (gloo, one thread each): rank 0 alone trains the plain `mlp` (`ddp-single`,
rank 1 waiting at a barrier), then both ranks train it under `DistributedDataParallel`, each
on its own batch of the same size (`ddp-gloo2/rank0`, `rank1`: a job folder, one trace per
rank; their timing beside it, `ddp-gloo2-rank0.timing.json`), rounds alternating in the same
two processes.
"""

import gzip
import json
import os
import shutil
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SCHEDULE = dict(wait=2, warmup=3, active=6)
# The profiler's `record_shapes`: off for pairs recorded as a user's default profile is
# (`../cpu-optimizer-pairs/record.py --no-shapes`).
RECORD_SHAPES = True
WARMUP_STEPS = 5
ROUNDS = 7
TIMED_STEPS = 15


# --- workloads ----------------------------------------------------------------------------------


def mlp():
    """16 linear layers of width 256, batch 64: 32 parameter tensors (the optimizer's loop)."""
    layers = []
    for _ in range(16):
        layers += [nn.Linear(256, 256), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    x = torch.randn(64, 256)
    y = torch.randn(64, 256)
    return model, (x, y), F.mse_loss


def transformer():
    """2 encoder layers, d_model 256, 4 heads, FFN 1024, 4 × 64 tokens."""
    layer = nn.TransformerEncoderLayer(
        d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0, batch_first=True
    )
    model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    x = torch.randn(4, 64, 256)
    y = torch.randn(4, 64, 256)
    return model, (x, y), F.mse_loss


def small_cnn():
    """Five 3 × 3 convolutions (32 to 128 channels, two of stride 2), each with batch norm and
    ReLU, global average pooling and a linear classifier."""

    def block(cin, cout, stride):
        return [
            nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(),
        ]

    return nn.Sequential(
        *block(3, 32, 1),
        *block(32, 64, 2),
        *block(64, 64, 1),
        *block(64, 128, 2),
        *block(128, 128, 1),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(128, 10),
    )


def cnn():
    """`small_cnn`, batch 8 at 32 × 32: convolutions and batch norm."""
    x = torch.randn(8, 3, 32, 32)
    y = torch.randint(0, 10, (8,))
    return small_cnn(), (x, y), F.cross_entropy


class GptBlock(nn.Module):
    """A pre-norm causal self-attention block (4 heads, `scaled_dot_product_attention`) and a
    GELU MLP of 4 × the width, each with its residual addition."""

    def __init__(self, width=128, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)
        )

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class TinyGpt(nn.Module):
    """Token and position embeddings (vocabulary 512, 64 positions, width 128), 3 `GptBlock`s,
    a final layer norm and an untied head."""

    def __init__(self):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(512, 128), nn.Embedding(64, 128)
        self.blocks = nn.ModuleList(GptBlock() for _ in range(3))
        self.ln_f, self.head = nn.LayerNorm(128), nn.Linear(128, 512, bias=False)

    def embed(self, idx):
        return self.tokens(idx) + self.positions(torch.arange(idx.shape[1]))

    def out(self, h):
        return self.head(self.ln_f(h))

    def forward(self, idx):
        h = self.embed(idx)
        for block in self.blocks:
            h = block(h)
        return self.out(h)


def gpt():
    """`TinyGpt`, 8 sequences of 64 tokens, next-token cross entropy."""
    x = torch.randint(0, 512, (8, 64))
    y = torch.randint(0, 512, (8, 64))
    return TinyGpt(), (x, y), lambda out, y: F.cross_entropy(out.flatten(0, 1), y.flatten())


class ResidualMlpBlock(nn.Module):
    """A pre-norm residual MLP block: layer norm, linear to 4 × the width, GELU, linear back,
    added to its input."""

    def __init__(self, width=256):
        super().__init__()
        self.ln = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)
        )

    def forward(self, x):
        return x + self.mlp(self.ln(x))


class ResMlp(nn.Module):
    """An input projection (64 → 256), 4 `ResidualMlpBlock`s, a final layer norm and a
    10-way classifier."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(64, 256)
        self.blocks = nn.ModuleList(ResidualMlpBlock() for _ in range(4))
        self.ln_f, self.head = nn.LayerNorm(256), nn.Linear(256, 10)

    def embed(self, x):
        return self.inp(x)

    def out(self, h):
        return self.head(self.ln_f(h))

    def forward(self, x):
        h = self.embed(x)
        for block in self.blocks:
            h = block(h)
        return self.out(h)


def resmlp():
    """`ResMlp`, batch 128."""
    x = torch.randn(128, 64)
    y = torch.randint(0, 10, (128,))
    return ResMlp(), (x, y), F.cross_entropy


def bigcnn():
    """`small_cnn`, batch 32 at 32 × 32: its first feature maps 4 MiB each."""
    x = torch.randn(32, 3, 32, 32)
    y = torch.randint(0, 10, (32,))
    return small_cnn(), (x, y), F.cross_entropy


def midcnn():
    """`small_cnn`, batch 16 at 32 × 32: its first feature maps 2 MiB each."""
    x = torch.randn(16, 3, 32, 32)
    y = torch.randint(0, 10, (16,))
    return small_cnn(), (x, y), F.cross_entropy


def cnn64():
    """`small_cnn`, batch 16 at 64 × 64: its first feature maps 8 MiB each."""
    x = torch.randn(16, 3, 64, 64)
    y = torch.randint(0, 10, (16,))
    return small_cnn(), (x, y), F.cross_entropy


def bigresmlp():
    """`ResMlp`, batch 1024: its hidden activations 4 MiB each."""
    x = torch.randn(1024, 64)
    y = torch.randint(0, 10, (1024,))
    return ResMlp(), (x, y), F.cross_entropy


def biggpt():
    """`TinyGpt`, 64 sequences of 64 tokens: its MLP's hidden activations 8 MiB each."""
    x = torch.randint(0, 512, (64, 64))
    y = torch.randint(0, 512, (64, 64))
    return TinyGpt(), (x, y), lambda out, y: F.cross_entropy(out.flatten(0, 1), y.flatten())


def bigtransformer():
    """`transformer`'s 2 encoder layers (ReLU FFN), 32 × 64 tokens: its FFN's hidden
    activations 8 MiB each."""
    model, _, loss_fn = transformer()
    x = torch.randn(32, 64, 256)
    y = torch.randn(32, 64, 256)
    return model, (x, y), loss_fn


class Images(torch.utils.data.Dataset):
    """CPU-side preprocessing of a synthetic image: decode-like work, crop, flip, normalize."""

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.rand(3, 128, 128, generator=g)
        img = F.avg_pool2d(img.unsqueeze(0), 9, stride=1, padding=4).squeeze(0)
        img = img[:, 48:80, 48:80]
        if i % 2:
            img = img.flip(-1)
        img = (img - 0.45) / 0.225
        return img, i % 10


# --- variants: the one change of each pair -------------------------------------------------------


class Config:
    """One configuration: its step (one training iteration), its threads, its untimed lead-in."""

    def __init__(self, name, step, threads=1, lead_in=2):
        self.name = name
        self.step = step
        self.threads = threads
        self.lead_in = lead_in
        # (a step, the `SixteenBitStash` it counts with), for the pairs that read their stash.
        self.probe = None


def training_step(model, batch, loss_fn, opt, forward=None):
    x, y = batch
    forward = model if forward is None else forward

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(forward(x), y).backward()
        opt.step()

    return step


def make_config(workload, variant):
    torch.manual_seed(0)
    name = f"{workload}-{variant}"
    if workload == "loader":
        workers = {"workers0": 0, "workers1": 1, "workers2": 2}[variant]
        model = small_cnn()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loader = torch.utils.data.DataLoader(Images(), batch_size=8, num_workers=workers)
        it = iter(loader)

        def step():
            img, label = next(it)
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(img), label).backward()
            opt.step()

        # The workers' prefetched batches (2 per worker) are used up before a timed round.
        return Config(name, step, lead_in=2 * workers + 2)

    model, batch, loss_fn = {
        "mlp": mlp,
        "transformer": transformer,
        "cnn": cnn,
        "gpt": gpt,
        "resmlp": resmlp,
        "bigcnn": bigcnn,
        "midcnn": midcnn,
        "cnn64": cnn64,
        "bigresmlp": bigresmlp,
        "biggpt": biggpt,
        "bigtransformer": bigtransformer,
    }[workload]()
    optim_args = {
        "base": {},
        "checkpoint": {},
        "reentrant": {},
        "threads1": {},
        "threads2": {},
        "loop": {"foreach": False},
        "fused": {"fused": True},
        "compiled": {},
        "gist": {},
        "bnfused": {},
        "bnrelu": {},
    }[variant]
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, **optim_args)
    forward = torch.compile(model) if variant == "compiled" else model
    if variant in ("checkpoint", "reentrant"):
        forward = checkpointed(workload, model, reentrant=variant == "reentrant")
    if variant == "gist":
        forward = stashed_in_16_bits(model)
    if variant == "bnfused":
        forward = batch_norm_fused(model)
    if variant == "bnrelu":
        forward = batch_norm_fused(model, by_hand=True)
    step = training_step(model, batch, loss_fn, opt, forward)
    config = Config(name, step, threads=2 if variant == "threads2" else 1)
    if workload in ("bigcnn", "bigresmlp", "biggpt", "bigtransformer"):
        # The activation bytes stashed per step, read after the timing by one more step
        # (BEFORE's under hooks that only count): the memory a `gist` prediction saves.
        counted = forward if variant == "gist" else stashed_in_16_bits(model, encode=False)
        config.probe = (training_step(model, batch, loss_fn, opt, counted), counted.stash)
    return config


class SixteenBitStash:
    """Gist's Delayed Precision Reduction (Jain et al., ISCA 2018, §3.2) as PyTorch does it:
    `torch.autograd.graph.saved_tensors_hooks`. Every FP32 activation autograd saves for the
    backward pass (a tensor of two or more dimensions that is not a parameter or a view of
    one) is stashed in FP16 right after its forward op and widened back to FP32 when the
    backward pass reads it. Other saved tensors (weights, batch norm's statistics, labels)
    are kept as they are. `stashed_bytes` counts, per step, the FP32 bytes packed and the
    bytes stashed instead."""

    def __init__(self, model, encode=True):
        self.params = {p.untyped_storage().data_ptr() for p in model.parameters()}
        self.encode = encode
        self.stashed_bytes = [0, 0]

    def encodes(self, t):
        return (
            t.dtype == torch.float32
            and t.dim() >= 2
            and t.untyped_storage().data_ptr() not in self.params
        )

    def pack(self, t):
        if not self.encodes(t):
            return t
        self.stashed_bytes[0] += t.numel() * t.element_size()
        if not self.encode:
            # Counting only (the probe of a configuration that does not encode).
            self.stashed_bytes[1] += t.numel() * t.element_size()
            return t
        encoded = t.to(torch.float16)
        self.stashed_bytes[1] += encoded.numel() * encoded.element_size()
        return ("fp16", encoded)

    def unpack(self, packed):
        if isinstance(packed, tuple):
            return packed[1].to(torch.float32)
        return packed


def stashed_in_16_bits(model, encode=True):
    """The model's forward under [`SixteenBitStash`]'s hooks (not the loss's: it is computed
    in the training step, outside this forward, and keeps its saved tensors in FP32).
    `encode=False`: the same hooks counting the bytes only (BEFORE's probe)."""
    stash = SixteenBitStash(model, encode)

    def forward(x):
        with torch.autograd.graph.saved_tensors_hooks(stash.pack, stash.unpack):
            return model(x)

    forward.stash = stash
    return forward


def batch_norm_fused(model, by_hand=False):
    """`small_cnn` with each `BatchNorm2d` and the `ReLU` after it run as one module, the
    convolutions left eager: the batch norm's statistics in one pass, its normalization and the
    ReLU in another, and in the backward pass the ReLU's gradient inside the batch norm's. The
    restructuring of Jung et al. (Daydream's `reconstruct_batchnorm`) as a user can have it
    today; it does not fuse the statistics into the convolution before, as the paper's kernels
    do. The same modules (and parameters) as `model`'s.

    The module is `torch.compile`d (Inductor's C++, static shapes), or with `by_hand` a
    `BatchNormReLU` whose forward and backward are each one function compiled alone: Inductor
    compiles a training graph of batch norm (its parameters requiring gradients) into a
    forward 18 times slower than the same ops without gradients on this project's CPU
    (`../cpu-batchnorm-pairs/bn_probe.py`), a compiler's cost and not the restructuring's."""
    layers = list(model)
    fused = []
    while layers:
        layer = layers.pop(0)
        if isinstance(layer, nn.BatchNorm2d) and layers and isinstance(layers[0], nn.ReLU):
            relu = layers.pop(0)
            if by_hand:
                layer = BatchNormReLU(layer)
            else:
                layer = torch.compile(nn.Sequential(layer, relu), dynamic=False)
        fused.append(layer)
    return nn.Sequential(*fused)


def _per_channel(v):
    return v[None, :, None, None]


@torch.compile(dynamic=False)
def _bn_relu_forward(x, weight, bias, eps: float):
    """Batch statistics in one pass; normalization, affine and ReLU in another."""
    var, mean = torch.var_mean(x, dim=(0, 2, 3), correction=0)
    invstd = torch.rsqrt(var + eps)
    scale = invstd * weight
    y = torch.relu((x - _per_channel(mean)) * _per_channel(scale) + _per_channel(bias))
    return y, mean, var, invstd


@torch.compile(dynamic=False)
def _bn_relu_backward(grad_y, x, y, weight, mean, invstd):
    """The ReLU's gradient (where its output is positive) inside the batch norm's backward:
    two per-channel sums in one pass, the input's gradient in another."""
    g = torch.where(y > 0, grad_y, torch.zeros_like(grad_y))
    xhat = (x - _per_channel(mean)) * _per_channel(invstd)
    grad_bias = g.sum(dim=(0, 2, 3))
    grad_weight = (g * xhat).sum(dim=(0, 2, 3))
    n = x.numel() // x.shape[1]
    grad_x = _per_channel(weight * invstd) * (
        g - _per_channel(grad_bias / n) - xhat * _per_channel(grad_weight / n)
    )
    return grad_x, grad_weight, grad_bias


class _BatchNormReLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, momentum, eps):
        y, mean, var, invstd = _bn_relu_forward(x, weight, bias, eps)
        n = x.numel() // x.shape[1]
        running_mean.lerp_(mean, momentum)
        running_var.lerp_(var * (n / (n - 1)), momentum)
        ctx.save_for_backward(x, y, weight, mean, invstd)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        grad_x, grad_weight, grad_bias = _bn_relu_backward(grad_y, *ctx.saved_tensors)
        return grad_x, grad_weight, grad_bias, None, None, None, None


class BatchNormReLU(nn.Module):
    """`BatchNorm2d` (training mode) and `ReLU` as one function of its own (the restructured
    batch norm's second half and its activation): `bn`'s parameters and running statistics."""

    def __init__(self, bn):
        super().__init__()
        self.bn = bn

    def forward(self, x):
        bn = self.bn
        bn.num_batches_tracked.add_(1)
        return _BatchNormReLUFunction.apply(
            x, bn.weight, bn.bias, bn.running_mean, bn.running_var, bn.momentum, bn.eps
        )


def checkpointed(workload, model, reentrant=False):
    """The model's forward with every layer under activation checkpointing
    (`torch.utils.checkpoint`, non-reentrant unless `reentrant`): each encoder layer of
    `transformer`, each linear layer with its ReLU of `mlp`, each convolution with its batch
    norm and ReLU of `cnn` (and its head), each block of `gpt` and `resmlp` (not their
    embeddings, input projection or head).
    Their activations are dropped after the forward pass and the backward pass runs each
    layer's forward again before its own backward (reentrant: inside the layer's
    `CheckpointFunctionBackward`, as a forward and backward of its own)."""
    from torch.utils.checkpoint import checkpoint

    # The larger programs (`bigcnn`, `biggpt`...) are the same models at larger batches.
    workload = workload.removeprefix("big")
    if workload in ("gpt", "resmlp"):

        def gpt_forward(idx):
            h = model.embed(idx)
            for block in model.blocks:
                h = checkpoint(block, h, use_reentrant=reentrant)
            return model.out(h)

        return gpt_forward
    if workload == "transformer":
        layers = list(model.layers)
    elif workload == "mlp":
        layers = [model[i : i + 2] for i in range(0, len(model), 2)]
    elif workload == "cnn":
        # Each convolution with its batch norm and ReLU, then the pooling and classifier.
        layers = [model[i : i + 3] for i in range(0, 15, 3)] + [model[15:]]
    else:
        raise ValueError(f"no checkpointed forward for {workload}")

    def forward(x):
        for layer in layers:
            x = checkpoint(layer, x, use_reentrant=reentrant)
        return x

    return forward


# --- tracing and interleaved timing -------------------------------------------------------------


def trace(outdir, config):
    """Traces SCHEDULE's steps of `config` into OUTDIR/<name>.json.gz (gzipped unchanged)."""
    torch.set_num_threads(config.threads)
    path = os.path.join(outdir, f"{config.name}.json")
    steps = sum(SCHEDULE.values())
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(**SCHEDULE),
        record_shapes=RECORD_SHAPES,
        on_trace_ready=lambda p: p.export_chrome_trace(path),
    ) as prof:
        for _ in range(steps):
            config.step()
            prof.step()
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)


def timed_round(config, before=None, after=None):
    """One round of `config`: its lead-in untimed, then TIMED_STEPS steps; the mean step in ms.
    `before`/`after` run around the timed steps (the ranks' barrier in `ddp`)."""
    torch.set_num_threads(config.threads)
    for _ in range(config.lead_in):
        config.step()
    if before:
        before()
    t0 = time.perf_counter()
    for _ in range(TIMED_STEPS):
        config.step()
    if after:
        after()
    return (time.perf_counter() - t0) * 1e3 / TIMED_STEPS


def write_timing(outdir, name, rounds_ms, interleaved_with, extra=None, path=None):
    """OUTDIR/<name>.timing.json, or `path` (a job folder holds rank traces only)."""
    timing = {
        "config": name,
        "steps_per_round": TIMED_STEPS,
        "rounds_ms": rounds_ms,
        "min_ms": min(rounds_ms),
        "median_ms": statistics.median(rounds_ms),
        "max_ms": max(rounds_ms),
        "interleaved_with": interleaved_with,
        "threads": extra.get("threads") if extra else None,
        "torch": torch.__version__,
        "device": "cpu",
    }
    if extra:
        timing.update(extra)
    with open(path or os.path.join(outdir, f"{name}.timing.json"), "w") as f:
        json.dump(timing, f, indent=1)
    print(
        f"{name}: median {timing['median_ms']:.3f} ms "
        f"(min {timing['min_ms']:.3f}, max {timing['max_ms']:.3f}; no profiler)",
        flush=True,
    )


def record_workload(outdir, workload, variants):
    configs = []
    for variant in variants:
        config = make_config(workload, variant)
        torch.set_num_threads(config.threads)
        for _ in range(WARMUP_STEPS):
            config.step()
        configs.append(config)
    for config in configs:
        trace(outdir, config)
        print(f"{config.name}: traced", flush=True)
    rounds = {c.name: [] for c in configs}
    for r in range(ROUNDS):
        order = configs[r % len(configs) :] + configs[: r % len(configs)]
        for config in order:
            rounds[config.name].append(timed_round(config))
    names = [c.name for c in configs]
    for config in configs:
        others = [n for n in names if n != config.name]
        extra = {"threads": config.threads}
        if config.probe:
            step, stash = config.probe
            stash.stashed_bytes = [0, 0]
            step()
            extra["activation_bytes_fp32"], extra["activation_bytes_stashed"] = stash.stashed_bytes
        write_timing(outdir, config.name, rounds[config.name], others, extra)


# --- data-parallel on gloo: two processes of one thread each -------------------------------------


DDP_WORKLOADS = {"mlp": mlp, "transformer": transformer, "cnn": cnn, "gpt": gpt}


def like(t):
    """A random tensor of `t`'s shape and kind: normal values, or integers below `t`'s largest
    (labels, token ids)."""
    return torch.randn_like(t) if t.is_floating_point() else torch.randint_like(t, int(t.max()) + 1)


def ddp_rank(rank, world, outdir, port, workload="mlp"):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    make = DDP_WORKLOADS[workload]

    # BEFORE: the plain model in one process (rank 0; rank 1 waits at the barrier).
    single = None
    if rank == 0:
        model, batch, loss_fn = make()
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        single = Config("ddp-single", training_step(model, batch, loss_fn, opt))
    # AFTER: the same model and per-rank batch (of the same shape and kind) under DDP (its
    # defaults: buffers such as batch norm's broadcast from rank 0 every forward) on both ranks.
    torch.manual_seed(0)
    model, (x, y), loss_fn = make()
    torch.manual_seed(rank + 1)
    batch = (like(x), like(y))
    ddp_model = DistributedDataParallel(model)
    opt = torch.optim.Adam(ddp_model.parameters(), lr=1e-4)
    pair = Config(f"rank{rank}", training_step(ddp_model, batch, loss_fn, opt))
    job = os.path.join(outdir, f"ddp-gloo{world}")
    os.makedirs(job, exist_ok=True)

    if rank == 0:
        for _ in range(WARMUP_STEPS):
            single.step()
    for _ in range(WARMUP_STEPS):
        pair.step()
    dist.barrier()
    if rank == 0:
        trace(outdir, single)
        print("ddp-single: traced", flush=True)
    dist.barrier()
    trace(job, pair)
    print(f"ddp-gloo{world}/{pair.name}: traced", flush=True)
    dist.barrier()

    single_ms, pair_ms = [], []
    for r in range(ROUNDS):
        for which in ("single", "pair") if r % 2 == 0 else ("pair", "single"):
            if which == "single":
                if rank == 0:
                    single_ms.append(timed_round(single))
                dist.barrier()
            else:
                pair_ms.append(timed_round(pair, before=dist.barrier))
                dist.barrier()
    if rank == 0:
        write_timing(outdir, "ddp-single", single_ms, [f"ddp-gloo{world}"], {"threads": 1})
    write_timing(
        job,
        pair.name,
        pair_ms,
        ["ddp-single"],
        {"threads": 1, "world_size": world},
        path=os.path.join(outdir, f"ddp-gloo{world}-{pair.name}.timing.json"),
    )
    dist.destroy_process_group()


def record_ddp(outdir, world=2, workload="mlp"):
    import torch.multiprocessing as mp

    mp.spawn(ddp_rank, args=(world, outdir, 29517, workload), nprocs=world, join=True)


if __name__ == "__main__":
    outdir, workload, variants = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(outdir, exist_ok=True)
    if workload == "ddp":
        record_ddp(outdir)
    elif workload == "ddp4":
        record_ddp(outdir, world=4)
    elif workload.startswith("ddp-"):
        record_ddp(outdir, workload=workload.removeprefix("ddp-"))
    else:
        record_workload(outdir, workload, variants)
