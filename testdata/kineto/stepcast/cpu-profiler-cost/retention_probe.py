"""What `record_shapes` costs a CPU-tensor step beyond the profiler's callbacks.

PyTorch's profiler, with `record_shapes=True`, keeps a reference to every op's input tensors
until the profile is collected (pytorch/pytorch#133444, "holds references to tensors until
profiling is completed"). A tensor then never hands its memory back within the traced steps:
each op's output takes memory the process has not touched lately (page faults on first
touch, caches cold) where an untraced step reuses the buffer just freed. A CUDA tensor's
memory is the device's (its caching allocator); a CPU tensor's is the host's, and its cost
lands inside the ops' recorded durations.

This probe traces configurations of `../cpu-pairs/record.py` (its SCHEDULE, one intra-op
thread) in one process, alternately with and without `record_shapes`, the same steps timed
without the profiler between them, and prints per step: the traced step, the ops named, and
the process's minor page faults over the profiled steps (`getrusage`).

    python3 retention_probe.py OUTDIR mlp-base transformer-base loader-workers0
"""

import collections
import json
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu-pairs"))
import record  # noqa: E402

OPS = ("Optimizer.step#Adam.step", "Optimizer.step#SGD.step", "aten::sqrt", "aten::div",
       "aten::rand", "aten::avg_pool2d", "aten::stack", "aten::addmm")


def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def untraced(config, steps=15):
    start_faults, start = faults(), time.perf_counter()
    for _ in range(steps):
        config.step()
    return (time.perf_counter() - start) / steps * 1e3, (faults() - start_faults) / steps


def traced(config, outdir, shapes, index):
    path = os.path.join(outdir, f"{config.name}-{index}-shapes{int(shapes)}.json")
    steps = sum(record.SCHEDULE.values())
    start_faults = faults()
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(**record.SCHEDULE),
        record_shapes=shapes,
        on_trace_ready=lambda p: p.export_chrome_trace(path),
    ) as prof:
        for _ in range(steps):
            config.step()
            prof.step()
    step_faults = (faults() - start_faults) / steps
    with open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    os.remove(path)
    total = collections.Counter()
    for e in events:
        name = "ProfilerStep" if e["name"].startswith("ProfilerStep#") else e["name"]
        if name == "ProfilerStep" or name in OPS:
            total[name] += e["dur"]
    active = record.SCHEDULE["active"]
    return {k: v / active / 1e3 for k, v in total.items()}, step_faults


def main():
    outdir, names = sys.argv[1], sys.argv[2:]
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, load average {os.getloadavg()[0]:.2f}")
    for name in names:
        workload, variant = name.split("-", 1)
        config = record.make_config(workload, variant)
        for _ in range(record.WARMUP_STEPS + config.lead_in):
            config.step()
        for index, shapes in enumerate([True, False, True, False]):
            ms, step_faults = untraced(config)
            print(f"{name} untraced: {ms:.2f} ms/step, {step_faults:.0f} page faults/step")
            per_step, traced_faults = traced(config, outdir, shapes, index)
            ops = ", ".join(f"{k} {v:.2f}" for k, v in sorted(per_step.items()))
            print(f"{name} record_shapes={shapes}: {ops} ms/step; {traced_faults:.0f} page faults/step")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
