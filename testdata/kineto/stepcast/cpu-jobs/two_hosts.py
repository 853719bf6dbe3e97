"""Records one of this folder's jobs as a job of two hosts on this one machine: each host's
processes run in a UTS namespace of their own (`unshare --uts`, root) named `node0` and `node1`,
so each rank's trace records its host's name (Kineto's `host_name`) and stepcast reads the job
as two hosts with a clock each. The first half of the ranks run on `node0`, the second on
`node1`, so the groups of consecutive ranks stay within a host (`tp_dp.py`'s TP groups,
`moe_ep.py`'s EP groups, `fsdp.py`'s shard groups, `pp_dp.py`'s and `pipelining_dp.py`'s stage
replicas) and the others
cross them, as jobs of several machines are laid out. The two "hosts" share one physical
clock: the offset stepcast solves between them has a known answer, 0.

    python3 two_hosts.py OUTDIR TP DP                  (tp_dp.py's job)
    python3 two_hosts.py --script SCRIPT OUTDIR A B    (SCRIPT: tp_dp, moe_ep, fsdp, pp_dp,
                                                        pipelining_dp or
                                                        pipelining_interleaved)

Writes OUTDIR/<job>-2hosts/rank<R>.json.gz and OUTDIR/<job>-2hosts.timing.json (the script's
files, renamed when both hosts are done).
"""

import os
import subprocess
import sys

import torch.multiprocessing as mp

HOSTS = 2

# Per script: its job's folder name and the arguments of its `run` after the rank.
SCRIPTS = {
    "tp_dp": (lambda a, b: f"tp{a}dp{b}", lambda a, b, outdir: (a, b, outdir, False)),
    "moe_ep": (lambda a, b: f"ep{a}dp{b}", lambda a, b, outdir: (a, b, outdir)),
    "fsdp": (
        lambda a, b: f"fsdp{a}" + (f"x{b}" if b > 1 else ""),
        lambda a, b, outdir: (a, b, outdir),
    ),
    "pp_dp": (lambda a, b: f"pp{a}dp{b}", lambda a, b, outdir: (a, b, outdir)),
    "pipelining_dp": (lambda a, b: f"pipelining-pp{a}dp{b}", lambda a, b, outdir: (a, b, outdir)),
    # `pipelining_dp.py`'s interleaved schedule (two stages a rank, the last rank's activations
    # going back to the first).
    "pipelining_interleaved": (
        lambda a, b: f"pipelining-interleaved-pp{a}dp{b}",
        lambda a, b, outdir: (a, b, outdir, True),
    ),
}

# The module of a script whose name is not its module's.
MODULES = {"pipelining_interleaved": "pipelining_dp"}


def local_rank(index, script, host, per_host, a, b, outdir):
    import importlib

    run = importlib.import_module(MODULES.get(script, script)).run
    run(host * per_host + index, *SCRIPTS[script][1](a, b, outdir))


def run_host(script, host, outdir, a, b):
    per_host = a * b // HOSTS
    mp.spawn(local_rank, args=(script, host, per_host, a, b, outdir), nprocs=per_host)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    args = sys.argv[1:]
    if len(args) == 6 and args[0] == "--host":
        script, host, outdir = args[1], int(args[2]), args[3]
        run_host(script, host, outdir, int(args[4]), int(args[5]))
        sys.exit(0)
    script = "tp_dp"
    if len(args) == 5 and args[0] == "--script":
        script, args = args[1].removesuffix(".py"), args[2:]
    if len(args) != 3 or script not in SCRIPTS:
        sys.exit(f"usage: two_hosts.py [--script {'|'.join(SCRIPTS)}] OUTDIR A B")
    outdir, a, b = args[0], int(args[1]), int(args[2])
    if a * b % HOSTS:
        sys.exit("the job's ranks must split evenly over two hosts")
    if script == "tp_dp" and a > a * b // HOSTS:
        sys.exit("each host must hold whole TP groups")
    os.makedirs(outdir, exist_ok=True)
    hosts = [
        subprocess.Popen(
            [
                "unshare",
                "--uts",
                "sh",
                "-c",
                f'hostname node{h} && exec "$0" "$@"',
                sys.executable,
                os.path.abspath(__file__),
                "--host",
                script,
                str(h),
                outdir,
                str(a),
                str(b),
            ]
        )
        for h in range(HOSTS)
    ]
    codes = [p.wait() for p in hosts]
    if any(codes):
        sys.exit(f"a host failed: exit codes {codes}")
    name = SCRIPTS[script][0](a, b)
    os.rename(os.path.join(outdir, name), os.path.join(outdir, f"{name}-2hosts"))
    os.rename(
        os.path.join(outdir, f"{name}.timing.json"),
        os.path.join(outdir, f"{name}-2hosts.timing.json"),
    )
