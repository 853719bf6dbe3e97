"""Whether the two configurations of the `mlp` recompute pair hold the same optimizer state
step for step, any denormal, and how long an untraced `Adam.step` takes in each. It imports
`../cpu-pairs/record.py`: python3 adam_probe.py"""
import os, sys, time, torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu-pairs"))
import record
torch.set_num_threads(1)
cfgs = {v: record.make_config("mlp", v) for v in ("base", "checkpoint")}
# reach the step's state objects through the closures
def opt_of(cfg):
    for c in cfg.step.__closure__ or []:
        if isinstance(c.cell_contents, torch.optim.Optimizer):
            return c.cell_contents
for n in range(1, 41):
    for v, cfg in cfgs.items():
        cfg.step()
    if n in (5, 10, 16, 25, 40):
        for v, cfg in cfgs.items():
            opt = opt_of(cfg)
            sq = [s["exp_avg_sq"] for s in opt.state.values()]
            tiny = sum(int(((t != 0) & (t.abs() < 1.17549435e-38)).sum()) for t in sq)
            zeros = sum(int((t == 0).sum()) for t in sq)
            total = sum(t.numel() for t in sq)
            t0 = time.perf_counter(); opt.step(); dt = time.perf_counter() - t0
            print(f"step {n} {v}: opt.step {dt*1e3:.2f} ms, denormal {tiny}, zeros {zeros} of {total}")
    # same values?
    if n in (5, 16):
        a = [s["exp_avg_sq"] for s in opt_of(cfgs["base"]).state.values()]
        b = [s["exp_avg_sq"] for s in opt_of(cfgs["checkpoint"]).state.values()]
        print("same exp_avg_sq:", all(torch.equal(x, y) for x, y in zip(a, b)))
