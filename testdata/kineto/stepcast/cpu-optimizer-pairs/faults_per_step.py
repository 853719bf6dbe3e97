"""Why `xeon/embmlp-adam-loop`'s embedding backward took 16.4 ms a step and
`xeon/embmlp-adam-fused`'s 3.1 (docs/accuracy.md, the blind `fused_optimizer` rows): the
`embmlp` program of `record.py`, trained on one thread with `Adam(foreach=False)` and with
`Adam(fused=True)`; per step, the minor page faults the process took (`getrusage`) and the
step's time.

    python3 faults_per_step.py      # with torch installed; prints, writes nothing

Seen on this machine (torch 2.15.0, 2026-12-01, Intel Xeon, twice): 18 718 and 18 847 minor page
faults a step with the loop (three times the 25.6 MB table's 6 250 pages: its gradient and the `sqrt`
and `div` results, each allocated and freed whole every step, so that the allocator hands the
memory back to the kernel and takes it fresh again), none with the fused update (the freed
gradient's memory reused as it is); steps of 104 and 15 ms. In the traces the gradient's
`aten::zeros` in the backward took 16.4 ms a step after the loop's update, 3.1 after the fused
one.
"""

import importlib.util
import os
import resource
import time

import torch

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("optimizer_pairs", os.path.join(here, "record.py"))
record = importlib.util.module_from_spec(spec)
spec.loader.exec_module(record)

torch.set_num_threads(1)
for variant in ("adam-loop", "adam-fused"):
    config = record.make_config("embmlp", variant)
    for _ in range(5):
        config.step()
    faults, steps_ms = [], []
    for _ in range(11):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        config.step()
        steps_ms.append(1e3 * (time.perf_counter() - t0))
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    faults.sort()
    steps_ms.sort()
    print(f"{variant}: {faults[5]} minor page faults a step, step {steps_ms[5]:.1f} ms (medians)")
