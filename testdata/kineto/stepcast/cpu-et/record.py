"""Records a PyTorch Execution Trace and the Kineto trace of the same steps, on the CPU.

A small CNN trained with Adam, a `DataLoader` with one worker process feeding it, profiled
for 3 steps (after 2 of warm-up) with `torch.profiler.profile(execution_trace_observer=...)`,
which records both files over the same window (the pairing HTA and Chakra join by
record-function id). Run in a throwaway virtual environment:

    python3.11 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch numpy
    /tmp/torchvenv/bin/python record.py OUT_DIR

Writes OUT_DIR/cnn_et.json and OUT_DIR/cnn_kineto.json (gzip them after).
"""

import os
import sys

import torch
from torch import nn
from torch.profiler import ExecutionTraceObserver, ProfilerActivity, profile, schedule


def main(out: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(4),
        nn.Flatten(),
        nn.Linear(32 * 16, 10),
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = torch.utils.data.TensorDataset(
        torch.randn(256, 3, 32, 32), torch.randint(0, 10, (256,))
    )
    loader = torch.utils.data.DataLoader(data, batch_size=32, num_workers=1)
    os.makedirs(out, exist_ok=True)
    et = ExecutionTraceObserver().register_callback(os.path.join(out, "cnn_et.json"))
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=0, warmup=2, active=3, repeat=1),
        record_shapes=True,
        execution_trace_observer=et,
        on_trace_ready=lambda p: p.export_chrome_trace(os.path.join(out, "cnn_kineto.json")),
    ) as prof:
        for step, (x, y) in enumerate(loader):
            if step == 5:
                break
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            prof.step()
    et.unregister_callback()


if __name__ == "__main__":
    main(sys.argv[1])
