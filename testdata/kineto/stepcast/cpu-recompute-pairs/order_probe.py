"""Traces the `mlp` base and checkpoint configurations in the order given, in one process, and
prints their `Adam.step`, `aten::sqrt` and `aten::div` per step. It imports
`../cpu-pairs/record.py`: python3 order_probe.py OUTDIR checkpoint base"""
import sys, os, gzip, json, collections, torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu-pairs"))
import record
out = sys.argv[1]; order = sys.argv[2:]
os.makedirs(out, exist_ok=True)
cfgs = [record.make_config("mlp", v) for v in order]
torch.set_num_threads(1)
for c in cfgs:
    for _ in range(record.WARMUP_STEPS):
        c.step()
for c in cfgs:
    record.trace(out, c)
for c in cfgs:
    d = json.load(gzip.open(os.path.join(out, c.name + ".json.gz")))
    ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
    agg = collections.Counter()
    for e in ev:
        if e["name"] in ("aten::sqrt", "aten::div", "Optimizer.step#Adam.step"):
            agg[e["name"]] += e["dur"]
    print(c.name, {k: round(v / 6000, 2) for k, v in agg.items()}, "ms/step (6 active)")
