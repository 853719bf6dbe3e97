"""Records `tp_dp.py`'s job as a job of two hosts on this one machine: each host's processes run
in a UTS namespace of their own (`unshare --uts`, root) named `node0` and `node1`, so each
rank's trace records its host's name (Kineto's `host_name`) and stepcast reads the job as two
hosts with a clock each. Tensor parallelism stays within a host (ranks 0, 1 on `node0`, 2, 3 on
`node1`), data parallelism crosses them ({0, 2}, {1, 3}), as jobs of several machines are laid
out. The two "hosts" share one physical clock: the offset stepcast solves between them has a
known answer, 0.

    python3 two_hosts.py OUTDIR TP DP

Writes OUTDIR/tp<TP>dp<DP>-2hosts/rank<R>.json.gz and OUTDIR/tp<TP>dp<DP>-2hosts.timing.json
(`tp_dp.py`'s files, renamed when both hosts are done).
"""

import os
import subprocess
import sys

import torch.multiprocessing as mp

HOSTS = 2


def local_rank(index, host, per_host, tp, dp, outdir):
    import tp_dp

    tp_dp.run(host * per_host + index, tp, dp, outdir, False)


def run_host(host, outdir, tp, dp):
    per_host = tp * dp // HOSTS
    mp.spawn(local_rank, args=(host, per_host, tp, dp, outdir), nprocs=per_host)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    if len(sys.argv) == 6 and sys.argv[1] == "--host":
        host, outdir, tp, dp = int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        run_host(host, outdir, tp, dp)
        sys.exit(0)
    if len(sys.argv) != 4:
        sys.exit("usage: two_hosts.py OUTDIR TP DP")
    outdir, tp, dp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if tp * dp % HOSTS or tp > tp * dp // HOSTS:
        sys.exit("TP x DP ranks must split evenly over two hosts, each a whole TP group")
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
                str(h),
                outdir,
                str(tp),
                str(dp),
            ]
        )
        for h in range(HOSTS)
    ]
    codes = [p.wait() for p in hosts]
    if any(codes):
        sys.exit(f"a host failed: exit codes {codes}")
    name = f"tp{tp}dp{dp}"
    os.rename(os.path.join(outdir, name), os.path.join(outdir, f"{name}-2hosts"))
    os.rename(
        os.path.join(outdir, f"{name}.timing.json"),
        os.path.join(outdir, f"{name}-2hosts.timing.json"),
    )
