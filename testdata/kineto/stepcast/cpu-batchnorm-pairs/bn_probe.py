"""Why `bnfused` ran slower than eager: one `BatchNorm2d` + `ReLU` (batch 32, 32 channels,
32 × 32) compiled by `torch.compile`, its forward timed with its parameters requiring gradients
(Inductor compiles a training graph) and under `torch.no_grad()` (an inference graph); and the
hand-fused `BatchNormReLU` of `bnrelu`, checked against eager `BatchNorm2d` + `ReLU` (outputs,
gradients, running statistics) and timed forward and backward beside it. One intra-op thread.

    python3 bn_probe.py
"""

import os
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu-pairs"))
from record import BatchNormReLU  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)
x = torch.randn(32, 32, 32, 32)


def timed_ms(step, runs=20):
    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(runs):
        step()
    return (time.perf_counter() - t0) * 1e3 / runs


compiled = torch.compile(nn.Sequential(nn.BatchNorm2d(32), nn.ReLU()), dynamic=False)
eager = nn.Sequential(nn.BatchNorm2d(32), nn.ReLU())
print(f"eager forward, parameters requiring gradients:    {timed_ms(lambda: eager(x)):7.3f} ms")
print(f"compiled forward, parameters requiring gradients: {timed_ms(lambda: compiled(x)):7.3f} ms")
with torch.no_grad():
    print(f"compiled forward, no_grad:                        {timed_ms(lambda: compiled(x)):7.3f} ms")

# The hand-fused module against eager, on the same values.
reference = nn.Sequential(nn.BatchNorm2d(32), nn.ReLU())
with torch.no_grad():
    reference[0].weight.uniform_(0.5, 1.5)
    reference[0].bias.uniform_(-0.5, 0.5)
fused_bn = nn.BatchNorm2d(32)
fused_bn.load_state_dict(reference[0].state_dict())
fused = BatchNormReLU(fused_bn)
xa = x.clone().requires_grad_()
xb = x.clone().requires_grad_()
grad = torch.randn_like(x)
ya, yb = reference(xa), fused(xb)
ya.backward(grad)
yb.backward(grad)
checks = {
    "output": (ya, yb),
    "input gradient": (xa.grad, xb.grad),
    "weight gradient": (reference[0].weight.grad, fused_bn.weight.grad),
    "bias gradient": (reference[0].bias.grad, fused_bn.bias.grad),
    "running mean": (reference[0].running_mean, fused_bn.running_mean),
    "running var": (reference[0].running_var, fused_bn.running_var),
}
for name, (a, b) in checks.items():
    err = (a - b).abs().max().item()
    print(f"hand-fused against eager, {name}: max |difference| {err:.2e}")
    assert torch.allclose(a, b, rtol=1e-4, atol=1e-4), name


def step(module, inp):
    def run():
        module(inp).backward(grad)

    return run


xr = x.clone().requires_grad_()
print(f"eager forward + backward:      {timed_ms(step(reference, xr)):7.3f} ms")
print(f"hand-fused forward + backward: {timed_ms(step(fused, xr)):7.3f} ms")
