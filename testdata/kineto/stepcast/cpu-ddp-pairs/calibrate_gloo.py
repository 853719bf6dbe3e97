#!/usr/bin/env python3
"""Calibrate gloo collectives over loopback on the project's 2-core CPU from Kineto traces.

Reads each job folder (one rank<R>.json.gz per rank), takes every `gloo:<collective>` range that
gloo's worker threads record (its `Input Dims`/`Input type` give the message), infers which
process group each worker thread belongs to (each ProcessGroupGloo has worker threads of its
own; the members of a group run the same collectives), matches each collective across the members
of its group (k-th instance of the same (kind, elements) in start order), and measures

    transfer = min over members of end - max over members of start

(last member's arrival to first member's completion; the traces share one clock: same host,
same baseTimeNanoseconds, and every matched instance overlaps on all members, checked below).

Then fits transfer = a + bytes / B per (kind, group size): ordinary least squares on all
instances, and a robust fit (least squares through the per-size medians, each size weighted
equally). Pure Python (no numpy on this machine).

    python3 calibrate.py [--json OUT.json]
"""

import gzip
import itertools
import json
import math
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

# The recorded jobs, relative to this script (testdata/kineto/stepcast/).
ROOT = Path(__file__).resolve().parent.parent
JOBS = [
    ("cpu-jobs", "tp2dp2"),
    ("cpu-jobs", "tp2dp2-dp-major"),
    ("cpu-jobs", "tp2dp3"),
    ("cpu-jobs", "pp2dp2"),
    ("cpu-jobs", "fsdp2x2"),
    ("cpu-job-pairs", "tp2dp2-adam-loop"),
    ("cpu-job-pairs", "tp2dp2-adam-fused"),
]
DTYPE_BYTES = {"float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4}
COLLECTIVES = ("gloo:all_reduce", "gloo:all_gather", "gloo:reduce_scatter", "gloo:broadcast",
               "gloo:reduce", "gloo:gather", "gloo:scatter", "gloo:alltoall", "gloo:barrier")


def union(iv):
    out = []
    for a, b in iv:
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def covered(iv, a, b):
    """Length of [a, b] covered by the sorted disjoint intervals iv."""
    import bisect
    i = max(0, bisect.bisect_right([x[0] for x in iv], a) - 1)
    tot = 0.0
    while i < len(iv) and iv[i][0] < b:
        lo, hi = max(a, iv[i][0]), min(b, iv[i][1])
        if hi > lo:
            tot += hi - lo
        i += 1
    return tot


def load_rank(path):
    d = json.load(gzip.open(path))
    info = d["distributedInfo"]
    ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
    pid = next(e["pid"] for e in ev if e["name"].startswith("ProfilerStep"))
    steps = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in ev
                   if e["name"].startswith("ProfilerStep") and e["tid"] == pid)
    colls = []
    for e in ev:
        if e["name"] in COLLECTIVES:
            a = e["args"]
            dims = a.get("Input Dims") or [[]]
            n = math.prod(dims[0]) if dims and dims[0] is not None else 0
            dt = (a.get("Input type") or ["float"])[0]
            colls.append(dict(kind=e["name"].split(":", 1)[1], tid=e["tid"], ts=e["ts"],
                              end=e["ts"] + e["dur"], dur=e["dur"], nelems=n,
                              bytes=n * DTYPE_BYTES.get(dt, 4), dtype=dt))
    colls.sort(key=lambda c: c["ts"])
    busy = union(sorted((e["ts"], e["ts"] + e["dur"]) for e in ev
                        if e["tid"] == pid and e.get("cat") == "cpu_op" and e["name"].startswith("aten::")))
    return dict(rank=info["rank"], world=info["world_size"], host=d.get("host_name"),
                base=d.get("baseTimeNanoseconds"), pid=pid, steps=steps, colls=colls,
                busy=busy, groups={p["pg_name"]: tuple(p["ranks"]) for p in info["pg_config"]},
                all_gloo=sorted((e["ts"], e["ts"] + e["dur"], e["tid"], e["name"]) for e in ev
                                if e["name"].startswith("gloo:")))


def infer_groups(ranks):
    """Assign every worker thread of every rank to one of its declared sub-groups (the world group
    is left out: the scripts issue no world collective inside the profiled window) such that each
    group's members ran the same multiset of (kind, elements). Returns the unique solution."""
    options = {}  # rank -> list of (assignment dict tid->group, per-group Counter)
    for r, rk in ranks.items():
        tids = sorted({c["tid"] for c in rk["colls"]})
        cands = [g for g, mem in rk["groups"].items() if len(mem) < rk["world"] and r in mem]
        opts = []
        for combo in itertools.product(cands, repeat=len(tids)):
            asg = dict(zip(tids, combo))
            per = {g: Counter() for g in cands}
            for c in rk["colls"]:
                per[asg[c["tid"]]][(c["kind"], c["nelems"])] += 1
            opts.append((asg, per))
        options[r] = opts
    order = sorted(ranks)
    sols = []

    def rec(i, chosen):
        if i == len(order):
            sols.append(dict(chosen))
            return
        r = order[i]
        for asg, per in options[r]:
            ok = True
            for g, cnt in per.items():
                for r2, (_, per2) in chosen.items():
                    if g in per2 and per2[g] != cnt:
                        ok = False
                        break
                if not ok:
                    break
            if ok:
                chosen[r] = (asg, per)
                rec(i + 1, chosen)
                del chosen[r]

    rec(0, {})
    return sols


def match(ranks, sol):
    """Per group, per (kind, nelems): k-th instance on each member, in start order."""
    by_group = defaultdict(lambda: defaultdict(list))  # g -> r -> colls
    members = {}
    for r, (asg, _) in sol.items():
        for c in ranks[r]["colls"]:
            g = asg[c["tid"]]
            by_group[g][r].append(c)
            members[g] = ranks[r]["groups"][g]
    out = []
    for g, per_rank in by_group.items():
        mem = members[g]
        keys = {(c["kind"], c["nelems"]) for cs in per_rank.values() for c in cs}
        for key in keys:
            seqs = {r: [c for c in per_rank.get(r, []) if (c["kind"], c["nelems"]) == key] for r in mem}
            n = {len(s) for s in seqs.values()}
            assert len(n) == 1, (g, key, {r: len(s) for r, s in seqs.items()})
            for k in range(n.pop()):
                inst = {r: seqs[r][k] for r in mem}
                out.append(dict(group=g, members=mem, kind=key[0], nelems=key[1],
                                bytes=inst[mem[0]]["bytes"], idx=k, inst=inst))
    return out


def step_of(rk, ts):
    for i, (a, b, _) in enumerate(rk["steps"]):
        if a <= ts < b:
            return i
    return None


def annotate(ranks, matched):
    job_gloo = [(s, e, r, tid, name) for r, rk in ranks.items() for (s, e, tid, name) in rk["all_gloo"]]
    for m in matched:
        inst = m["inst"]
        smax = max(c["ts"] for c in inst.values())
        emin = min(c["end"] for c in inst.values())
        m["start_max"], m["end_min"] = smax, emin
        m["transfer"] = emin - smax
        m["durs"] = {r: c["dur"] for r, c in inst.items()}
        m["arrival_spread"] = smax - min(c["ts"] for c in inst.values())
        m["end_spread"] = max(c["end"] for c in inst.values()) - emin
        m["step"] = step_of(ranks[m["members"][0]], inst[m["members"][0]]["ts"])
        # Another gloo range (any kind, other thread) overlapping the transfer window...
        own = {(r, c["tid"], c["ts"]) for r, c in inst.items()}
        same_proc, other_proc = 0, 0
        for (s, e, r, tid, name) in job_gloo:
            if (r, tid, s) in own or e <= smax or s >= emin:
                continue
            if r in inst:
                same_proc += 1
            else:
                other_proc += 1
        m["concurrent_same_rank"] = same_proc  # ... on a member rank (same process)
        m["concurrent_other_rank"] = other_proc  # ... on a non-member rank
        w = max(emin - smax, 1e-9)
        # Mean number of the job's main threads busy in aten ops during the transfer window
        # (a proxy for the CPU the transfer competes with on the 2 cores).
        m["busy_main"] = sum(covered(rk["busy"], smax, emin) for rk in ranks.values()) / w


def annotate_overlap(matched):
    """Fraction of each transfer window covered by other instances' transfer windows."""
    for m in matched:
        others = union(sorted((o["start_max"], o["end_min"]) for o in matched
                              if o is not m and o["end_min"] > m["start_max"] and o["start_max"] < m["end_min"]))
        w = max(m["transfer"], 1e-9)
        m["xfer_overlap"] = covered(others, m["start_max"], m["end_min"]) / w


def clock_check(ranks, matched):
    """For each pair of ranks sharing a group: the offset d (clock_b = clock_a + d) range for
    which every matched instance still overlaps on both; one clock <=> 0 inside every range."""
    res = {}
    for m in matched:
        mem = m["members"]
        for a, b in itertools.combinations(mem, 2):
            ca, cb = m["inst"][a], m["inst"][b]
            # overlap: cb.ts - d < ca.end  and  ca.ts < cb.end - d   (b's times shifted by -d)
            lo, hi = cb["ts"] - ca["end"], cb["end"] - ca["ts"]
            cur = res.get((a, b), (-math.inf, math.inf))
            res[(a, b)] = (max(cur[0], lo), min(cur[1], hi))
    return res


def fit_ls(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - slope * mx, slope  # a (us), us per byte


def q(v, p):
    v = sorted(v)
    if not v:
        return float("nan")
    i = (len(v) - 1) * p
    lo, hi = math.floor(i), math.ceil(i)
    return v[lo] + (v[hi] - v[lo]) * (i - lo)


def fmt_bytes(b):
    if b >= 2**20 and b % 2**20:
        return f"{b / 2**20:.3f} MiB"
    for unit, s in (("MiB", 2**20), ("KiB", 2**10)):
        if b >= s:
            return f"{b / s:.2f} {unit}"
    return f"{b} B"


def describe_fit(label, rows):
    xs = [m["bytes"] for m in rows]
    ys = [m["transfer"] for m in rows]
    sizes = sorted(set(xs))
    print(f"\n### fit {label}: n={len(rows)}, sizes={[fmt_bytes(s) for s in sizes]}")
    if len(sizes) < 2:
        print("  (one size only: no fit)")
        return None
    out = {}
    ls = fit_ls(xs, ys)
    med = {s: statistics.median([y for x, y in zip(xs, ys) if x == s]) for s in sizes}
    rob = fit_ls(list(med), list(med.values()))
    # Theil-Sen on medians (pairwise slopes), intercept = median of (y - slope x).
    slopes = [(med[b] - med[a]) / (b - a) for a, b in itertools.combinations(sizes, 2)]
    ts_slope = statistics.median(slopes)
    ts_a = statistics.median([med[s] - ts_slope * s for s in sizes])
    for name, f in (("OLS all instances", ls), ("LS on per-size medians", rob), ("Theil-Sen on medians", (ts_a, ts_slope))):
        if f is None:
            continue
        a, sl = f
        bw = (1 / sl) / 1e3 if sl > 0 else float("inf")  # bytes/us = MB/s -> GB/s
        ratios = [y / (a + sl * x) for x, y in zip(xs, ys) if a + sl * x > 0]
        resid = [y - (a + sl * x) for x, y in zip(xs, ys)]
        print(f"  {name:24s}: a = {a:8.1f} us, B = {bw:6.3f} GB/s (1e9 B/s); "
              f"resid median {statistics.median(resid):+.0f} us, |resid| p50 {q([abs(r) for r in resid], .5):.0f} us; "
              f"measured/fit p10..p90 = {q(ratios, .1):.2f}..{q(ratios, .9):.2f}")
        out[name] = dict(a_us=a, B_GBps=bw)
    for s in sizes:
        ys_s = [y for x, y in zip(xs, ys) if x == s]
        print(f"    {fmt_bytes(s):>10s}: n={len(ys_s):3d} median {med[s]:8.0f} us  p10 {q(ys_s, .1):8.0f}  p90 {q(ys_s, .9):8.0f}")
    return out


def main():
    all_rows = []
    summary = {}
    for folder, job in JOBS:
        d = ROOT / folder / job
        ranks = {}
        for p in sorted(d.glob("rank*.json.gz")):
            rk = load_rank(p)
            ranks[rk["rank"]] = rk
        hosts = {rk["host"] for rk in ranks.values()}
        bases = {rk["base"] for rk in ranks.values()}
        sols = infer_groups(ranks)
        print(f"\n## {folder}/{job}: {len(ranks)} processes on 2 cores; hosts {hosts}; "
              f"baseTimeNanoseconds {'same' if len(bases) == 1 else bases}; thread->group solutions: {len(sols)}")
        # Several assignments agree on the counts (e.g. a world-like pairing of identical TP
        # threads); keep those whose matched instances all overlap on one clock, and of those the
        # one whose members' ends lie closest together (a collective ends on all members at
        # about the same time).
        scored = []
        for s_ in sols:
            mm = match(ranks, s_)
            annotate(ranks, mm)
            bad = sum(1 for m in mm if m["transfer"] <= 0)
            spread = statistics.median([m["end_spread"] for m in mm])
            mean_spread = sum(m["end_spread"] for m in mm) / len(mm)
            scored.append((bad, mean_spread, spread, s_))
        scored.sort(key=lambda t: (t[0], t[1]))
        print("   best assignments (non-overlapping, mean end spread us, median end spread us): " +
              "; ".join(f"({b}, {ms:.0f}, {md:.0f})" for b, ms, md, _ in scored[:4]))
        sol = scored[0][3]
        same_as_best = [t for t in scored if t[0] == 0 and t[1] <= scored[0][1] * 1.0001]
        assert scored[0][0] == 0 and len(same_as_best) == 1
        for r in sorted(sol):
            inv = defaultdict(list)
            for tid, g in sol[r][0].items():
                inv[g].append(tid)
            print(f"   rank {r}: " + ", ".join(f"pg {g} {ranks[r]['groups'][g]} <- threads {sorted(t)}" for g, t in sorted(inv.items())))
        matched = match(ranks, sol)
        annotate(ranks, matched)
        annotate_overlap(matched)
        cc = clock_check(ranks, matched)
        neg = [m for m in matched if m["transfer"] <= 0]
        print(f"   matched {len(matched)} instances; non-overlapping (transfer <= 0): {len(neg)}")
        print("   one-clock check (feasible offset of rank b vs a, us; 0 must lie inside): " +
              "; ".join(f"{a}-{b}: [{lo:+.0f}, {hi:+.0f}]" for (a, b), (lo, hi) in sorted(cc.items())))
        groups_kind = defaultdict(list)
        for m in matched:
            m["job"] = job
            m["nprocs"] = len(ranks)
            m["gsize"] = len(m["members"])
            groups_kind[(m["kind"], m["gsize"], m["bytes"])].append(m)
        print(f"   {'kind':11s} {'gsize':>5s} {'bytes':>10s} {'n':>4s} {'transfer p50':>12s} {'p10':>7s} {'p90':>7s} "
              f"{'op dur p50':>10s} {'arrival spread p50':>18s} {'conc(same rank)':>15s} {'isolated p50':>12s}")
        for (kind, gs, b), ms in sorted(groups_kind.items()):
            t = [m["transfer"] for m in ms]
            dur = [x for m in ms for x in m["durs"].values()]
            spr = [m["arrival_spread"] for m in ms]
            iso = [m["transfer"] for m in ms if m["concurrent_same_rank"] == 0]
            conc = sum(1 for m in ms if m["concurrent_same_rank"] > 0)
            print(f"   {kind:11s} {gs:5d} {fmt_bytes(b):>10s} {len(ms):4d} {statistics.median(t):12.0f} {q(t, .1):7.0f} {q(t, .9):7.0f} "
                  f"{statistics.median(dur):10.0f} {statistics.median(spr):18.0f} {conc:15d} "
                  f"{(statistics.median(iso) if iso else float('nan')):12.0f}")
            summary.setdefault(job, []).append(dict(kind=kind, gsize=gs, bytes=b, n=len(ms),
                                                    transfer_p50=statistics.median(t), p10=q(t, .1), p90=q(t, .9),
                                                    op_dur_p50=statistics.median(dur),
                                                    concurrent_same_rank=conc,
                                                    isolated_p50=statistics.median(iso) if iso else None))
        all_rows += matched

    print("\n# Fits: transfer = a + bytes/B")
    fits = {}
    ar = [m for m in all_rows if m["kind"] == "all_reduce"]
    for gs in sorted({m["gsize"] for m in ar}):
        rows = [m for m in ar if m["gsize"] == gs]
        fits[f"all_reduce g{gs} all jobs"] = describe_fit(f"all_reduce, group size {gs}, all jobs", rows)
        rows4 = [m for m in rows if m["nprocs"] == 4]
        if len(rows4) != len(rows):
            fits[f"all_reduce g{gs} 4-proc jobs"] = describe_fit(f"all_reduce, group size {gs}, 4-process jobs only", rows4)
        iso = [m for m in rows if m["concurrent_same_rank"] == 0]
        fits[f"all_reduce g{gs} isolated"] = describe_fit(
            f"all_reduce, group size {gs}, no other gloo op in flight on a member rank", iso)
        tp = [m for m in rows if m["job"].startswith("tp2dp2")]
        fits[f"all_reduce g{gs} tp2dp2 family"] = describe_fit(f"all_reduce, group size {gs}, tp2dp2* jobs (4 procs)", tp)
    # Quiet instances: no other transfer in flight anywhere in the job (< 5 % of the window) and
    # the job's main threads mostly idle (< 0.5 busy on average) -> closest to "one all-reduce
    # alone on the machine".
    for gs in sorted({m["gsize"] for m in ar}):
        rows = [m for m in ar if m["gsize"] == gs]
        fits[f"all_reduce g{gs} no concurrent transfer"] = describe_fit(
            f"all_reduce, group size {gs}, no other transfer in flight in the job (xfer_overlap < 0.05)",
            [m for m in rows if m["xfer_overlap"] < 0.05])
        fits[f"all_reduce g{gs} quiet"] = describe_fit(
            f"all_reduce, group size {gs}, quiet (xfer_overlap < 0.05 and busy_main < 0.5)",
            [m for m in rows if m["xfer_overlap"] < 0.05 and m["busy_main"] < 0.5])

    # Same-size all-reduces of different groups in flight together (DDP's last bucket on both DP
    # groups): the job's aggregate rate over their union window, and the time one would take at
    # that rate alone (an estimate of an uncontended large transfer, assuming the two shared the
    # same resources fairly and one alone could use them all).
    print("\n# Concurrent same-size all-reduces of different groups (per job, per step)")
    agg = defaultdict(list)
    for m in ar:
        agg[(m["job"], m["gsize"], m["bytes"], m["step"])].append(m)
    implied = defaultdict(list)
    for (job, gs, b, st), ms in sorted(agg.items(), key=lambda kv: str(kv[0])):
        if len({m["group"] for m in ms}) < 2 or len(ms) != len({m["group"] for m in ms}):
            continue
        lo, hi = min(m["start_max"] for m in ms), max(m["end_min"] for m in ms)
        if any(m["xfer_overlap"] < 0.2 for m in ms):
            continue
        if any(m["busy_main"] >= 1.0 for m in ms):  # overlapping compute too (e.g. backward)
            continue
        rate = sum(m["bytes"] for m in ms) / (hi - lo)  # bytes/us
        implied[(job, gs, b)].append((rate / 1e3, b / rate))
    for (job, gs, b), v in implied.items():
        print(f"  {job} g{gs} {fmt_bytes(b)}: {len(v)} steps, aggregate {statistics.median([x[0] for x in v]):.2f} GB/s "
              f"(p10 {q([x[0] for x in v], .1):.2f}, p90 {q([x[0] for x in v], .9):.2f}); one alone at that rate "
              f"{statistics.median([x[1] for x in v]):.0f} us (p10 {q([x[1] for x in v], .1):.0f}, p90 {q([x[1] for x in v], .9):.0f})")
    for gs, b in sorted({(k[1], k[2]) for k in implied}):
        allv = [x for k, v in implied.items() if k[1] == gs and k[2] == b for x in v]
        b = {b}
        print(f"  all jobs g{gs} {[fmt_bytes(x) for x in b]}: {len(allv)} steps, aggregate median "
              f"{statistics.median([x[0] for x in allv]):.2f} GB/s, one alone {statistics.median([x[1] for x in allv]):.0f} us")
        # Combined: quiet per-size medians + this implied point.
        quiet = [m for m in ar if m["gsize"] == gs and m["xfer_overlap"] < 0.05 and m["busy_main"] < 0.5]
        sizes = sorted({m["bytes"] for m in quiet})
        if sizes and len(allv) >= 3:
            pts = {s: statistics.median([m["transfer"] for m in quiet if m["bytes"] == s]) for s in sizes}
            pts[next(iter(b))] = statistics.median([x[1] for x in allv])
            a, sl = fit_ls(list(pts), list(pts.values()))
            print(f"  combined g{gs} (quiet medians {[fmt_bytes(s) for s in sizes]} + implied large point): "
                  f"a = {a:.0f} us, B = {1 / sl / 1e3:.3f} GB/s; points: " +
                  ", ".join(f"{fmt_bytes(s)}={v:.0f}us (fit {a + sl * s:.0f})" for s, v in sorted(pts.items())))
            fits[f"all_reduce g{gs} quiet+implied"] = dict(a_us=a, B_GBps=1 / sl / 1e3)

    ag = [m for m in all_rows if m["kind"] == "all_gather"]
    if ag:
        describe_fit("all_gather (bytes = per-rank input), group size 2", ag)
    # Per-job fits for all_reduce group size 2
    print("\n# Per-job all_reduce fits (LS on per-size medians)")
    for job in dict.fromkeys(m["job"] for m in ar):
        for gs in sorted({m["gsize"] for m in ar if m["job"] == job}):
            rows = [m for m in ar if m["job"] == job and m["gsize"] == gs]
            sizes = sorted({m["bytes"] for m in rows})
            if len(sizes) < 2:
                print(f"  {job} g{gs}: one size only ({fmt_bytes(sizes[0])})")
                continue
            med = {s: statistics.median([m["transfer"] for m in rows if m["bytes"] == s]) for s in sizes}
            a, sl = fit_ls(list(med), list(med.values()))
            print(f"  {job} g{gs}: a = {a:7.0f} us, B = {1 / sl / 1e3:6.3f} GB/s over {[fmt_bytes(s) for s in sizes]}")

    if "--json" in sys.argv:
        out = sys.argv[sys.argv.index("--json") + 1]
        rows = [dict(job=m["job"], nprocs=m["nprocs"], kind=m["kind"], group=m["group"], members=m["members"],
                     gsize=m["gsize"], nelems=m["nelems"], bytes=m["bytes"], idx=m["idx"], step=m["step"],
                     transfer_us=m["transfer"], start_max=m["start_max"], end_min=m["end_min"],
                     arrival_spread_us=m["arrival_spread"], durs_us=m["durs"],
                     concurrent_same_rank=m["concurrent_same_rank"],
                     concurrent_other_rank=m["concurrent_other_rank"],
                     busy_main=m["busy_main"], xfer_overlap=m["xfer_overlap"]) for m in all_rows]
        json.dump(dict(instances=rows, per_job=summary, fits=fits), open(out, "w"), indent=1, default=str)
        print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
