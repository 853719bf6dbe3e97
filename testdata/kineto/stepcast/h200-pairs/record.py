"""Records the before/after pairs beside this script: one workload, one change, both traced with
the PyTorch profiler (Kineto) on one GPU, so a what-if predicted from BEFORE can be checked
against AFTER as measured. It extends `../h100-pairs/record.py` (the same workloads, schedule
and timing) with bf16 autocast, activation checkpointing, `torch.compile` on the MLP (default
and "reduce-overhead" modes), DataLoader workers 1 and 2, and `shape`: a one-process
DistributedDataParallel transformer (NCCL) compiled with compiled autograd, its inputs copied
on a side stream and an EMA of its weights kept on another (several streams, collectives).

    python3 record.py OUTDIR [CONFIG ...]

A configuration is `<workload>-<variant>`; a pair is two variants of one workload that differ
by exactly one change (README.md beside this script lists them). Configurations run one after
another in one process, each with a fresh model: five warm-up steps, then `torch.profiler` with
schedule wait 2 / warmup 3 / active 6 and `record_shapes=True` (the trace:
OUTDIR/<workload>-<variant>.json.gz), then, with the profiler off, three rounds of 30 steps,
each timed by the wall clock between two device synchronizations
(OUTDIR/<workload>-<variant>.timing.json: the steady step time without the profiler's
overhead). A configuration that fails is reported and the next one runs.
Inputs are random tensors made on the device before the loop (no data loader) except in the
`loader` workload, whose inputs come from a CPU-side dataset through `DataLoader`.
"""

import gzip
import json
import os
import shutil
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

DEVICE = "cuda"
SCHEDULE = dict(wait=2, warmup=3, active=6)
TIMED_STEPS = 30


# --- workloads ----------------------------------------------------------------------------------


def mlp():
    """16 linear layers of width 1024, batch 64: launch-bound on any recent GPU."""
    layers = []
    for _ in range(16):
        layers += [nn.Linear(1024, 1024), nn.ReLU()]
    model = nn.Sequential(*layers[:-1]).to(DEVICE)
    x = torch.randn(64, 1024, device=DEVICE)
    y = torch.randn(64, 1024, device=DEVICE)
    return model, (x, y), lambda out, y: F.mse_loss(out, y)


def transformer():
    """6 encoder layers, d_model 1024, 16 heads, 16 × 512 tokens: matrix-bound in FP32."""
    layer = nn.TransformerEncoderLayer(
        d_model=1024, nhead=16, dim_feedforward=4096, dropout=0.0, batch_first=True
    )
    model = nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False).to(DEVICE)
    x = torch.randn(16, 512, 1024, device=DEVICE)
    y = torch.randn(16, 512, 1024, device=DEVICE)
    return model, (x, y), lambda out, y: F.mse_loss(out.float(), y)


def resnet():
    """torchvision ResNet-18, batch 64 at 224 × 224: cuDNN convolutions and batch norm."""
    import torchvision

    model = torchvision.models.resnet18(num_classes=1000).to(DEVICE)
    x = torch.randn(64, 3, 224, 224, device=DEVICE)
    y = torch.randint(0, 1000, (64,), device=DEVICE)
    return model, (x, y), lambda out, y: F.cross_entropy(out.float(), y)


class Images(torch.utils.data.Dataset):
    """CPU-side preprocessing of a synthetic image: decode-like work, crop, flip, normalize."""

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.rand(3, 256, 256, generator=g)
        img = F.avg_pool2d(img.unsqueeze(0), 3, stride=1, padding=1).squeeze(0)
        img = img[:, 16:240, 16:240]
        if i % 2:
            img = img.flip(-1)
        img = (img - 0.45) / 0.225
        return img, i % 1000


def shape_step(compiled_autograd):
    """One-process DDP (NCCL) transformer, compiled with compiled autograd; the next batch is
    copied host-to-device on a side stream and an EMA of the weights is updated on another."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    if not dist.is_initialized():
        dist.init_process_group("nccl", rank=0, world_size=1)
    layer = nn.TransformerEncoderLayer(
        d_model=1024, nhead=16, dim_feedforward=4096, dropout=0.0, batch_first=True
    )
    model = nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False).to(DEVICE)
    ddp = DDP(model, bucket_cap_mb=8)
    if compiled_autograd:
        torch._dynamo.config.compiled_autograd = True
        torch._dynamo.config.optimize_ddp = "python_reducer"
    forward = torch.compile(ddp)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    ema = [p.detach().clone() for p in model.parameters()]
    copy_stream, ema_stream = torch.cuda.Stream(), torch.cuda.Stream()
    host_x = [torch.randn(8, 512, 1024).pin_memory() for _ in range(2)]
    y = torch.randn(8, 512, 1024, device=DEVICE)
    state = {"next": host_x[0].to(DEVICE)}

    def step(i):
        x = state["next"]
        with torch.cuda.stream(copy_stream):
            state["next"] = host_x[(i + 1) % 2].to(DEVICE, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        F.mse_loss(forward(x).float(), y).backward()
        opt.step()
        torch.cuda.current_stream().wait_stream(copy_stream)
        ema_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(ema_stream):
            params = [p.detach() for p in model.parameters()]
            torch._foreach_mul_(ema, 0.999)
            torch._foreach_add_(ema, params, alpha=0.001)
        torch.cuda.current_stream().wait_stream(ema_stream)

    return step


# --- variants: the one change of each pair -------------------------------------------------------


def make_step(workload, variant):
    """Returns (step(i), batches) for one configuration; step runs one training iteration."""
    torch.manual_seed(0)
    if workload != "shape":
        torch._dynamo.config.compiled_autograd = False
    if workload == "loader":
        import torchvision

        model = torchvision.models.resnet18(num_classes=1000).to(DEVICE)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        workers = int(variant.removeprefix("workers"))
        loader = torch.utils.data.DataLoader(
            Images(), batch_size=32, num_workers=workers, pin_memory=workers > 0
        )
        it = iter(loader)

        def step(i):
            img, label = next(it)
            img = img.to(DEVICE, non_blocking=True)
            label = label.to(DEVICE, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(img), label).backward()
            opt.step()

        return step

    if workload == "shape":
        return shape_step(compiled_autograd=variant == "ddp_compiled")

    model, (x, y), loss_fn = {"mlp": mlp, "transformer": transformer, "resnet": resnet}[workload]()

    if variant == "bf16":
        # bf16 autocast needs no loss scaling: the one change is the autocast region.
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)

        def step(i):
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()

        return step

    if variant == "checkpoint":
        # Activation checkpointing of every encoder layer: its activations are recomputed in
        # the backward pass instead of kept (what `stepcast whatif ... recompute` models).
        from torch.utils.checkpoint import checkpoint

        opt = torch.optim.Adam(model.parameters(), lr=1e-4)

        def forward(h):
            for layer in model.layers:
                h = checkpoint(layer, h, use_reentrant=False)
            return h

        def step(i):
            opt.zero_grad(set_to_none=True)
            loss_fn(forward(x), y).backward()
            opt.step()

        return step

    if variant == "compiled_ro":
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        forward = torch.compile(model, mode="reduce-overhead")

        def step(i):
            opt.zero_grad(set_to_none=True)
            loss_fn(forward(x), y).backward()
            opt.step()

        return step

    if variant == "amp":
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        scaler = torch.amp.GradScaler("cuda")

        def step(i):
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

        return step

    if variant in ("fp32", "fused", "loop", "sync", "compiled", "eager_capturable"):
        optim_args = {
            "fp32": {},
            "fused": {"fused": True},
            "loop": {"foreach": False},
            "sync": {},
            "compiled": {},
            "eager_capturable": {"capturable": True},
        }[variant]
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, **optim_args)
        forward = torch.compile(model) if variant == "compiled" else model

        def step(i):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(forward(x), y)
            if variant == "sync":
                torch.cuda.synchronize()
            loss.backward()
            if variant == "sync":
                torch.cuda.synchronize()
            opt.step()
            if variant == "sync":
                torch.cuda.synchronize()

        return step

    if variant == "graphed":
        # Whole-step capture, as in PyTorch's CUDA Graphs documentation: warm up on a side
        # stream, capture forward, backward and the (capturable) optimizer, then replay.
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, capturable=True)
        static_x, static_y = x.clone(), y.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                loss_fn(model(static_x), static_y).backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            static_loss = loss_fn(model(static_x), static_y)
            static_loss.backward()
            opt.step()

        def step(i):
            static_x.copy_(x)
            static_y.copy_(y)
            graph.replay()

        return step

    raise SystemExit(f"unknown variant {variant}")


# What the profiler records besides the default of this folder (`record_shapes=True`): a
# configuration `<workload>-<variant>-prof_<option>` is the same program traced with these
# options, so the profiler's own cost per option is measured (the steps timed without the
# profiler are the same program's).
PROFILER_OPTIONS = {
    "": dict(record_shapes=True),
    "minimal": dict(record_shapes=False),
    "stack": dict(record_shapes=True, with_stack=True),
    "memory": dict(record_shapes=True, profile_memory=True),
    "all": dict(record_shapes=True, with_stack=True, profile_memory=True, with_flops=True),
}


def record(outdir, workload, variant):
    name = f"{workload}-{variant}"
    variant, _, option = variant.partition("-prof_")
    step = make_step(workload, variant)
    for i in range(5):
        step(i)
    torch.cuda.synchronize()
    path = os.path.join(outdir, f"{name}.json")
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    steps = sum(SCHEDULE.values())
    with torch.profiler.profile(
        activities=activities,
        schedule=torch.profiler.schedule(**SCHEDULE),
        **PROFILER_OPTIONS[option],
        on_trace_ready=lambda p: p.export_chrome_trace(path),
    ) as prof:
        for i in range(steps):
            step(i)
            prof.step()
    torch.cuda.synchronize()
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)
    # The same steps with the profiler off: the outcome without its overhead.
    for i in range(3):
        step(i)
    torch.cuda.synchronize()
    rounds_ms = []
    for _ in range(3):
        t0 = time.perf_counter()
        for i in range(TIMED_STEPS):
            step(i)
        torch.cuda.synchronize()
        rounds_ms.append((time.perf_counter() - t0) * 1e3 / TIMED_STEPS)
    rounds_ms.sort()
    timing = {
        "config": name,
        "steps_per_round": TIMED_STEPS,
        "median_ms": rounds_ms[1],
        "rounds_ms": rounds_ms,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
    }
    with open(os.path.join(outdir, f"{name}.timing.json"), "w") as f:
        json.dump(timing, f, indent=1)
    print(f"{name}: median {timing['median_ms']:.3f} ms (no profiler)", flush=True)


if __name__ == "__main__":
    outdir, configs = sys.argv[1], sys.argv[2:]
    os.makedirs(outdir, exist_ok=True)
    failed = []
    for config in configs:
        workload, variant = config.split("-", 1)
        try:
            record(outdir, workload, variant)
        except Exception as e:  # one broken configuration must not cost the others
            print(f"{config}: FAILED: {type(e).__name__}: {e}", flush=True)
            failed.append(config)
    sys.exit(1 if failed else 0)
