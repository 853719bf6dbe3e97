"""Records the next GPU pairs (README.md beside this script, bars fixed before recording):
the workloads, schedule, profiler options and timing of `../h200-pairs/record.py`, with three
changes it does not have:

- `<workload>-offload` (`resnet`, `transformer`): the `fp32` program with its forward pass
  and loss under `torch.autograd.graph.save_on_cpu(pin_memory=True)`: every activation
  autograd saves is copied to pinned host memory in the forward pass and back in the
  backward (what `stepcast whatif ... offload --fraction 1` models);
- `copy-pageable` and `copy-pinned`: ResNet-18 whose batch (64 × 3 × 224 × 224 FP32,
  38.5 MB) is copied from a host tensor to the GPU every step with a blocking `.to()`, from
  pageable memory or from pinned memory (`Tensor.pin_memory()`, once): the one change is the
  host memory's kind (`faster_copies`);
- the `loader` configurations of `../h200-pairs/` again, on whichever machine is lent;
- `<workload>-gist` (`resnet`, `transformer`): the `fp32` program with its forward pass and
  loss under `torch.autograd.graph.saved_tensors_hooks` that stash every saved FP32
  activation in FP16 (a cast kernel each way: Gist's Delayed Precision Reduction, as
  `../cpu-pairs/record.py`'s `gist` variant does on the CPU; what `stepcast whatif ... gist
  --fraction 1` models).

    python3 record.py OUTDIR CONFIG ...
    python3 record.py --dry CONFIG ...    # builds each step and runs two on the CPU: a check
                                          # of this script on a machine without a GPU
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "h200-pairs"))
import record as base  # noqa: E402

base_make_step = base.make_step


def make_step(workload, variant):
    """`../h200-pairs/record.py`'s `make_step`, with `offload`, `gist` and the `copy`
    workload."""
    if workload == "copy":
        return copy_step(pinned={"pageable": False, "pinned": True}[variant])
    if variant in ("offload", "gist"):
        model, (x, y), loss_fn = {"resnet": base.resnet, "transformer": base.transformer}[
            workload
        ]()
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        pin = base.DEVICE == "cuda"
        if variant == "offload":
            hooks = lambda: torch.autograd.graph.save_on_cpu(pin_memory=pin)  # noqa: E731
        else:
            stash = SixteenBitStash(model)
            hooks = lambda: torch.autograd.graph.saved_tensors_hooks(  # noqa: E731
                stash.pack, stash.unpack
            )

        def step(i):
            opt.zero_grad(set_to_none=True)
            with hooks():
                loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()

        return step
    return base_make_step(workload, variant)


class SixteenBitStash:
    """Every saved FP32 activation (two or more dimensions, not a parameter or a view of one)
    stashed in FP16 after its forward op and widened back when the backward pass reads it;
    other saved tensors kept as they are (`../cpu-pairs/record.py`'s, on either device)."""

    def __init__(self, model):
        self.params = {p.untyped_storage().data_ptr() for p in model.parameters()}

    def pack(self, t):
        if (
            t.dtype == torch.float32
            and t.dim() >= 2
            and t.untyped_storage().data_ptr() not in self.params
        ):
            return ("fp16", t.to(torch.float16))
        return t

    def unpack(self, packed):
        if isinstance(packed, tuple):
            return packed[1].to(torch.float32)
        return packed


def copy_step(pinned):
    import torchvision

    model = torchvision.models.resnet18(num_classes=1000).to(base.DEVICE)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    host = torch.randn(64, 3, 224, 224)
    if pinned and base.DEVICE == "cuda":
        host = host.pin_memory()
    y = torch.randint(0, 1000, (64,), device=base.DEVICE)

    def step(i):
        x = host.to(base.DEVICE)
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return step


base.make_step = make_step


def dry(configs):
    """Each configuration's step built and run twice on the CPU (no profiler, no timing)."""
    base.DEVICE = "cpu"
    for config in configs:
        workload, variant = config.split("-", 1)
        step = make_step(workload, variant)
        for i in range(2):
            step(i)
        print(f"{config}: ran on the CPU", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "--dry":
        dry(sys.argv[2:])
        sys.exit(0)
    outdir, configs = sys.argv[1], sys.argv[2:]
    os.makedirs(outdir, exist_ok=True)
    failed = []
    for config in configs:
        workload, variant = config.split("-", 1)
        try:
            base.record(outdir, workload, variant)
        except Exception as e:  # one broken configuration must not cost the others
            print(f"{config}: FAILED: {type(e).__name__}: {e}", flush=True)
            failed.append(config)
    sys.exit(1 if failed else 0)
