"""Records a CPU trace the way many programs are profiled: the whole loop inside one
`torch.profiler.profile()`, no schedule and no `prof.step()`, each iteration wrapped in
`record_function("train_step")` (a two-layer MLP, Adam, one intra-op thread).

    python3 record.py OUTDIR userstep      -> OUTDIR/userstep.json (gzipped into this folder)

(`nomarkers` and `modules` write the same loop without the ranges, and with a schedule,
`with_modules` and `with_stack`; they were recorded beside it and not kept.)

    python3 record.py OUTDIR inference     -> OUTDIR/inference.json

An inference loop profiled the same way: a small CNN in `eval()` under `torch.no_grad()` over
a `DataLoader` (batches of 16 images made on the CPU, `num_workers=0`), no optimizer, no
`prof.step()` and no ranges of its own: its only per-iteration landmark is the DataLoader's
`__next__` range.
"""
import sys, torch, torch.nn as nn
from torch.profiler import profile, ProfilerActivity, record_function
torch.manual_seed(0); torch.set_num_threads(1)
out, which = sys.argv[1], sys.argv[2]
m = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)); opt = torch.optim.Adam(m.parameters())
x = torch.randn(64, 256); y = torch.randint(0, 10, (64,))
def step():
    loss = nn.functional.cross_entropy(m(x), y); opt.zero_grad(); loss.backward(); opt.step()
for _ in range(3): step()
if which == "nomarkers":
    with profile(activities=[ProfilerActivity.CPU]) as p:
        for _ in range(5): step()
    p.export_chrome_trace(f"{out}/nomarkers.json")
elif which == "userstep":
    with profile(activities=[ProfilerActivity.CPU]) as p:
        for i in range(6):
            with record_function(f"train_step"): step()
    p.export_chrome_trace(f"{out}/userstep.json")
elif which == "inference":
    from torch.utils.data import DataLoader, Dataset
    class Images(Dataset):
        def __len__(self): return 16 * 8
        def __getitem__(self, i):
            g = torch.Generator().manual_seed(i)
            return torch.rand(3, 32, 32, generator=g) * 2 - 1
    cnn = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                        nn.Flatten(), nn.Linear(32, 10)).eval()
    loader = DataLoader(Images(), batch_size=16, num_workers=0)
    with torch.no_grad():
        for batch in loader: cnn(batch)
        with profile(activities=[ProfilerActivity.CPU]) as p:
            for batch in loader: cnn(batch).argmax(1)
    p.export_chrome_trace(f"{out}/inference.json")
elif which == "modules":
    with profile(activities=[ProfilerActivity.CPU], schedule=torch.profiler.schedule(wait=1, warmup=1, active=5), with_modules=True, with_stack=True) as p:
        for _ in range(7): step(); p.step()
    p.export_chrome_trace(f"{out}/modules.json")
