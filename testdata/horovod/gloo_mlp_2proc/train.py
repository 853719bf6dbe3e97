"""A 2-process CPU Horovod (Gloo) training run, profiled: each rank writes its PyTorch profiler
(Kineto) trace, and rank 0 writes the Horovod timeline of the same profiled steps.

Run by record.sh (horovodrun -np 2 --gloo). The model is a small MLP whose gradients differ in
size (so that Horovod fuses some into one all-reduce and not others) and two of whose
parameters share a shape (so that the join cannot match gradients by shape alone).
"""

import os
import sys

import torch
import horovod.torch as hvd

out = sys.argv[1]
hvd.init()
torch.manual_seed(0)
torch.set_num_threads(1)


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(512, 1024)
        self.fc2 = torch.nn.Linear(1024, 1024)
        self.fc3 = torch.nn.Linear(1024, 1024)
        self.head = torch.nn.Linear(1024, 10)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        x = torch.relu(self.fc3(x))
        return self.head(x)


model = Mlp()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size())
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
data = torch.randn(64, 512)
target = torch.randint(0, 10, (64,))


def step():
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(data), target)
    loss.backward()
    optimizer.step()


for _ in range(3):  # warm-up, outside the recording
    step()

schedule = torch.profiler.schedule(wait=0, warmup=1, active=4, repeat=1)
timeline = os.path.join(out, f"horovod_timeline.rank{hvd.rank()}.json")
with torch.profiler.profile(
    activities=[torch.profiler.ProfilerActivity.CPU],
    schedule=schedule,
    record_shapes=True,
) as prof:
    for i in range(5):
        if i == 1:
            # The timeline covers the profiled (active) steps, as the profiler does. Every
            # rank calls it; Horovod writes the timeline on rank 0 only.
            hvd.start_timeline(timeline, mark_cycles=True)
        step()
        prof.step()
    hvd.stop_timeline()
prof.export_chrome_trace(os.path.join(out, f"rank{hvd.rank()}.pt.trace.json"))
