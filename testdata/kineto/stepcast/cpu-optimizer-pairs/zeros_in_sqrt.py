"""Why `mlp-adam-loop`'s `aten::sqrt` and `aten::div` took 4-10 times longer per element than
`widemlp-adam-loop`'s (docs/accuracy.md, the `fused_optimizer` rows): the `mlp` program of
`../cpu-pairs/record.py`, trained 8 Adam steps (`foreach=False`) on one thread, then

- the mean time of `exp_avg_sq.sqrt()` per 65 k-element tensor inside the training loop, and
- per sampled tensor, the share of exact zeros in `exp_avg_sq` (dead ReLU units: no gradient,
  no second moment), of subnormals, and `sqrt` timed alone on it.

    python3 zeros_in_sqrt.py      # with torch installed; prints, writes nothing

Seen on this machine (torch 2.15.0, 2026-11-28, three runs): 156-292 µs per tensor in the loop;
alone, 39-47 µs on a tensor without zeros, 102-213 µs on tensors 25-77 % zeros, no subnormals.
"""

import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu-pairs"))
import record as cpu_pairs  # noqa: E402

torch.set_num_threads(1)
torch.manual_seed(0)
model, (x, y), loss_fn = cpu_pairs.mlp()
opt = torch.optim.Adam(model.parameters(), lr=1e-4, foreach=False)
for _ in range(8):
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()

total_s, count = 0.0, 0
for _ in range(5):
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    for p in model.parameters():
        v = opt.state[p]["exp_avg_sq"]
        v.mul_(0.999)
        t0 = time.perf_counter()
        v.sqrt()
        if v.numel() == 65536:
            total_s += time.perf_counter() - t0
            count += 1
print(f"sqrt in the loop: {total_s / count * 1e6:.1f} µs per 65 k-element tensor")

tiny = torch.finfo(torch.float32).tiny
for i, p in enumerate(model.parameters()):
    v = opt.state[p]["exp_avg_sq"]
    if v.numel() != 65536 or i % 6:
        continue
    zeros = (v == 0).float().mean().item()
    subnormal = ((v != 0) & (v.abs() < tiny)).float().mean().item()
    t0 = time.perf_counter()
    for _ in range(20):
        v.sqrt()
    print(
        f"tensor {i}: zeros {zeros:.3f}, subnormal {subnormal:.3f}, "
        f"sqrt alone {(time.perf_counter() - t0) / 20 * 1e6:.1f} µs"
    )
