#!/usr/bin/env python3
"""Jobs of many ranks through reduced ranks, on local processes and on Dask: the benchmark of
issue #30 (docs/scaling.md, docs/benchmarks.md).

For each job size N it writes a job folder of N ranks made from real rank traces
(`stepcast-bench job`: each source's steps repeated to --target-bytes, `distributedInfo`
rewritten, clocks moved), then measures:

- local: `stepcast reduce JOB -o REDUCED` (the map, every core of this machine), then
  `stepcast replay --json REDUCED` (the reduce step; the median of seven runs, timed in rounds
  over every job size) and, for comparison, `stepcast replay
  --json JOB` (both in one process);
- Dask: `stepcast.distributed.replay(JOB, client, output=FOLDER)` on a `LocalCluster` of
  --workers worker processes (the workers write the reduced ranks into a shared folder), and
  the same without `output` (they come back through Dask), each in a fresh Python process
  whose own peak memory is the reduce node's (the scheduler runs in it too);

each with its wall time, CPU time (user + system, the process and its threads; for Dask the
driver's and, separately, its workers') and peak RSS, the reduced bytes per rank against the
trace's, and that every document is the CLI's for the traces. Run it from the repository root
after `cargo build --release` and `pip install "./python[dask]"`:

    python3 crates/stepcast-bench/reduced_jobs.py --ranks 256 1024 --work /tmp/stepcast-jobs
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DLRM = REPO / "testdata/kineto/param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto"
STEPCAST = REPO / "target/release/stepcast"
BENCH = REPO / "target/release/stepcast-bench"

DASK_RUN = r"""
import json, resource, sys, time
from dask.distributed import Client, LocalCluster
import stepcast.distributed as sd

def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_maxrss * 1024

if __name__ == "__main__":
    job, workers, out, shared = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    # "-": the reduced ranks come back through Dask; else the workers write them into it.
    shared = None if shared == "-" else shared
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           dashboard_address=":0")
    client = Client(cluster)
    cpu0, _ = usage()
    start = time.perf_counter()
    result = sd.replay(job, client, output=shared)
    wall = time.perf_counter() - start
    cpu1, peak = usage()
    worker = client.run(usage)
    client.close(); cluster.close()
    with open(out, "w") as f:
        json.dump({"document": dict(result), "wall_s": wall, "cpu_s": cpu1 - cpu0,
                   "peak_rss_bytes": peak,
                   "worker_cpu_s": sum(c for c, _ in worker.values()),
                   "worker_peak_rss_bytes": max(p for _, p in worker.values())}, f)
"""


REDUCE_STEP_ROUNDS = 7


def measured(args: list, stdout=subprocess.DEVNULL) -> dict:
    """Runs a command; its wall time, CPU time and peak RSS (from wait4's rusage)."""
    start = time.perf_counter()
    process = subprocess.Popen([str(a) for a in args], stdout=stdout)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(map(str, args))}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
        "peak_rss_bytes": usage.ru_maxrss * 1024,
    }


def folder_bytes(folder: Path, suffix: str) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.name.endswith(suffix))


def run(ranks: int, work: Path, target_bytes: int, workers: int) -> dict:
    job = work / f"job{ranks}"
    reduced = work / f"job{ranks}-reduced"
    if not job.is_dir() or len(list(job.glob("*.json"))) != ranks:
        subprocess.run(
            [BENCH, "job", DLRM, "--ranks", str(ranks), "--target-bytes", str(target_bytes),
             "-o", job],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
    subprocess.run(["rm", "-rf", reduced], check=True)
    trace_bytes = folder_bytes(job, ".json")
    row = {"ranks": ranks, "trace_bytes": trace_bytes}
    row["local_map"] = measured([STEPCAST, "reduce", job, "-o", reduced])
    reduced_bytes = folder_bytes(reduced, ".stepcast-rank")
    row["reduced_bytes_per_rank"] = reduced_bytes / ranks
    row["reduced_share_of_trace"] = reduced_bytes / trace_bytes
    # The reduce step is timed later, in rounds over every job size (`time_reduce_steps`).
    with open(work / "from-reduced.json", "wb") as out:
        measured([STEPCAST, "replay", "--json", reduced], out)
    with open(work / "from-traces.json", "wb") as out:
        row["local_one_process"] = measured([STEPCAST, "replay", "--json", job], out)
    from_traces = json.loads((work / "from-traces.json").read_text())
    row["reduced_document_identical"] = (
        (work / "from-reduced.json").read_bytes() == (work / "from-traces.json").read_bytes()
    )
    script = work / "dask_run.py"
    script.write_text(DASK_RUN)
    for variant, shared in [("dask", work / f"job{ranks}-dask"), ("dask_through_client", "-")]:
        subprocess.run(["rm", "-rf", str(shared)], check=True)
        answer = work / f"{variant}.json"
        start = time.perf_counter()
        subprocess.run([sys.executable, script, job, str(workers), answer, shared], check=True,
                       stderr=subprocess.DEVNULL)
        dask = json.loads(answer.read_text())
        row[variant] = {k: v for k, v in dask.items() if k != "document"}
        row[variant]["with_cluster_start_wall_s"] = time.perf_counter() - start
        row[f"{variant}_document_identical"] = dask["document"] == from_traces
    return row


def time_reduce_steps(rows: list, work: Path) -> None:
    """The local reduce step of every job, timed in REDUCE_STEP_ROUNDS rounds, each round
    running every job size once in turn. The step is short, and this VM's kernel time for one
    and the same run (zeroing the pages it touches, which the host backs anew once they have
    been freed a while) varies tenfold from run to run and drifts over minutes: timed in
    rounds, the sizes meet the same drift, where five runs of one size and then five of the
    next (minutes apart, the Dask runs between them) did not. The median run by wall time
    stands for each size, with the fastest run and the user time (the program's own work)
    beside it."""
    runs = {r["ranks"]: [] for r in rows}
    for _ in range(REDUCE_STEP_ROUNDS):
        for r in rows:
            reduced = work / f"job{r['ranks']}-reduced"
            runs[r["ranks"]].append(measured([STEPCAST, "replay", "--json", reduced]))
    for r in rows:
        mine = runs[r["ranks"]]
        r["local_reduce_step"] = sorted(mine, key=lambda x: x["wall_s"])[len(mine) // 2]
        r["local_reduce_step_fastest"] = min(mine, key=lambda x: x["wall_s"])
        r["local_reduce_step_user_s"] = sorted(x["user_s"] for x in mine)[len(mine) // 2]
        r["local_reduce_step_runs"] = mine


def table(rows: list) -> str:
    mb = lambda b: f"{b / 1e6:,.0f} MB"  # noqa: E731
    lines = [
        "| ranks | traces | reduced per rank (share) | local map wall / CPU | local reduce step "
        "wall / CPU / peak | one process wall / CPU / peak | Dask driver wall / CPU / peak "
        "| Dask workers CPU / peak | Dask through the client: driver wall / CPU / peak "
        "| same document |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        m, s, o, d = r["local_map"], r["local_reduce_step"], r["local_one_process"], r["dask"]
        c = r["dask_through_client"]
        same = (
            r["reduced_document_identical"]
            and r["dask_document_identical"]
            and r["dask_through_client_document_identical"]
        )
        lines.append(
            f"| {r['ranks']:,} | {mb(r['trace_bytes'])} | "
            f"{r['reduced_bytes_per_rank'] / 1e3:,.0f} kB ({100 * r['reduced_share_of_trace']:.1f} %) | "
            f"{m['wall_s']:.1f} s / {m['cpu_s']:.1f} s | "
            f"{s['wall_s']:.2f} s / {s['cpu_s']:.2f} s / {mb(s['peak_rss_bytes'])} | "
            f"{o['wall_s']:.1f} s / {o['cpu_s']:.1f} s / {mb(o['peak_rss_bytes'])} | "
            f"{d['wall_s']:.1f} s / {d['cpu_s']:.1f} s / {mb(d['peak_rss_bytes'])} | "
            f"{d['worker_cpu_s']:.1f} s / {mb(d['worker_peak_rss_bytes'])} | "
            f"{c['wall_s']:.1f} s / {c['cpu_s']:.1f} s / {mb(c['peak_rss_bytes'])} | "
            f"{'yes' if same else 'NO'} |"
        )
    if len(rows) >= 2:
        a, b = rows[0], rows[-1]
        grow = lambda f: f(b) / f(a)  # noqa: E731
        lines.append("")
        lines.append(
            f"Growth {a['ranks']:,} → {b['ranks']:,} ranks (×{b['ranks'] / a['ranks']:.0f}): "
            f"reduce step wall ×{grow(lambda r: r['local_reduce_step']['wall_s']):.2f}, CPU "
            f"×{grow(lambda r: r['local_reduce_step']['cpu_s']):.2f}, peak "
            f"×{grow(lambda r: r['local_reduce_step']['peak_rss_bytes']):.2f} (user time "
            f"×{grow(lambda r: r['local_reduce_step_user_s']):.2f}, fastest run's wall "
            f"×{grow(lambda r: r['local_reduce_step_fastest']['wall_s']):.2f}; kernel time "
            f"{min(x['sys_s'] for x in b['local_reduce_step_runs']):.2f}-"
            f"{max(x['sys_s'] for x in b['local_reduce_step_runs']):.2f} s over the "
            f"{len(b['local_reduce_step_runs'])} runs at {b['ranks']:,}; median of the rounds' "
            f"own ratios ×{statistics.median(y['wall_s'] / x['wall_s'] for x, y in zip(a['local_reduce_step_runs'], b['local_reduce_step_runs'])):.2f}); Dask driver wall "
            f"×{grow(lambda r: r['dask']['wall_s']):.2f}, CPU "
            f"×{grow(lambda r: r['dask']['cpu_s']):.2f}, peak "
            f"×{grow(lambda r: r['dask']['peak_rss_bytes']):.2f}; reduced bytes per rank "
            f"×{grow(lambda r: r['reduced_bytes_per_rank']):.2f}."
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--target-bytes", type=int, default=5_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/tmp/stepcast-jobs"))
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--table", type=Path, help="print the table of rows saved by --json")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text())))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    rows = [run(n, args.work, args.target_bytes, args.workers) for n in sorted(args.ranks)]
    time_reduce_steps(rows, args.work)
    print(json.dumps(rows, indent=2) if args.json else table(rows))


if __name__ == "__main__":
    main()
