"""Measures the peak CPU memory a training step allocates, for the configurations of
`../cpu-pairs/record.py`: the outcome a memory-for-time trade's "saves N MiB" stands for.

    python3 probe.py OUT.tsv WORKLOAD:VARIANT ...
    python3 probe.py OUT.tsv --traces DIR WORKLOAD:VARIANT ...   # and keep each profile


Each configuration is built in this process (as `record.py` builds it: seed 0, one intra-op
thread), run for WARMUP steps, then profiled for STEPS steps with `torch.profiler` (CPU
activity, `profile_memory=True`, **`record_shapes=False`**: with shapes the profiler keeps
every op's input tensors alive until the profile is collected, pytorch/pytorch#133444, and no
tensor would be freed). Per profiled step: the largest "Total Allocated" of the profiler's
`[memory]` events inside the step's `ProfilerStep#` range, and the allocated bytes at the
step's start. "Total Allocated" counts only what was allocated while the profiler watched
memory (from the warm-up step on) and not freed since, so a step's peak above its start is
what the step itself holds at its fullest: activations, gradients, temporaries. OUT.tsv gets
one line per configuration and profiled step: its start and peak (the first step's start is
empty: nothing was watched before it), under a line naming the torch version. With `--traces DIR`, each configuration's profile is
also kept, gzipped unchanged, as DIR/<workload>-<variant>.json.gz: a trace with the memory
events a prediction of the step's peak is made from.
"""

import gzip
import json
import os
import shutil
import sys
import tempfile

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu-pairs"))
import record  # noqa: E402

WARMUP = 3
STEPS = 3


def peaks(config, keep=None):
    torch.set_num_threads(config.threads)
    for _ in range(WARMUP):
        config.step()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU],
            schedule=torch.profiler.schedule(wait=0, warmup=1, active=STEPS),
            record_shapes=False,
            profile_memory=True,
            on_trace_ready=lambda p: p.export_chrome_trace(path),
        ) as prof:
            for _ in range(STEPS + 1):
                config.step()
                prof.step()
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        if keep:
            with open(path, "rb") as src, gzip.open(keep, "wb", compresslevel=9) as dst:
                shutil.copyfileobj(src, dst)
    steps = sorted(
        (e["ts"], e["ts"] + e["dur"])
        for e in events
        if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")
    )
    # CPU allocations only (device type 0). "Total Allocated" counts what was allocated while
    # the profiler watched memory and not freed since: the same origin for every step.
    memory = sorted(
        (e["ts"], e["args"]["Total Allocated"])
        for e in events
        if e.get("name") == "[memory]" and e.get("args", {}).get("Device Type") == 0
    )
    out = []
    for start, end in steps:
        inside = [total for ts, total in memory if start <= ts <= end]
        before = [total for ts, total in memory if ts < start]
        if inside:
            out.append({"start_bytes": before[-1] if before else None, "peak_bytes": max(inside)})
    return out


if __name__ == "__main__":
    out_path, specs = sys.argv[1], sys.argv[2:]
    traces = None
    if specs[:1] == ["--traces"]:
        traces, specs = specs[1], specs[2:]
        os.makedirs(traces, exist_ok=True)
    lines = [
        f"# torch {torch.__version__}, record_shapes=False, profile_memory=True",
        "config\tstep\tstart_bytes\tpeak_bytes",
    ]
    for spec in specs:
        workload, variant = spec.split(":")
        config = record.make_config(workload, variant)
        keep = os.path.join(traces, f"{config.name}.json.gz") if traces else None
        for i, step in enumerate(peaks(config, keep)):
            start = "" if step["start_bytes"] is None else step["start_bytes"]
            lines.append(f"{config.name}\t{i}\t{start}\t{step['peak_bytes']}")
            print(lines[-1], flush=True)
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
