"""Records a CPU trace the way many programs are profiled: the whole loop inside one
`torch.profiler.profile()`, no schedule and no `prof.step()`, each iteration wrapped in
`record_function("train_step")` (a two-layer MLP, Adam, one intra-op thread).

    python3 record.py OUTDIR userstep      -> OUTDIR/userstep.json (gzipped into this folder)

(`nomarkers` and `modules` write the same loop without the ranges, and with a schedule,
`with_modules` and `with_stack`; they were recorded beside it and not kept.)
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
elif which == "modules":
    with profile(activities=[ProfilerActivity.CPU], schedule=torch.profiler.schedule(wait=1, warmup=1, active=5), with_modules=True, with_stack=True) as p:
        for _ in range(7): step(); p.step()
    p.export_chrome_trace(f"{out}/modules.json")
