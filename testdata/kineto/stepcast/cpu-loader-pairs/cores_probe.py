"""What this machine's cores deliver when the processes sharing them are all busy: a fixed piece
of work (pure Python like `record.py`'s `Sentences`, or a tensor op on one thread like its
`HeavyImages`) run in 1, 2 and 3 processes at once, in interleaved rounds; then how fast
`record.py`'s two datasets deliver batches of 8 with nothing else running: loaded in the
process (`num_workers=0`), by 1 worker and by 2 workers, in interleaved rounds.

    python3 cores_probe.py > cores_probe.txt

Per kind of work and number of processes: each round's wall time until all finish, the
median, and the throughput in cores (k processes × the median alone / the median with k).
On a machine whose cores each run a process at full pace, 2 processes take as long as 1 and
deliver 2 cores. The spread of the rounds of one process alone is the machine's own pace
moving (other tenants of the host), which no trace records.
"""

import importlib.util
import os

import json
import statistics
import subprocess
import sys
import time

WORK = {
    "python": "s = 0\nfor i in range(3_000_000):\n    s += i * i % 7\n",
    "tensor op": (
        "import torch, torch.nn.functional as F\n"
        "torch.set_num_threads(1)\n"
        "x = torch.rand(1, 3, 224, 224)\n"
        "for _ in range(40):\n"
        "    F.avg_pool2d(x, 9, stride=1, padding=4)\n"
    ),
}
ROUNDS = 6
LOADER_ROUNDS = 3
BATCHES = 16


def run(code, k):
    t = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(k)]
    for p in procs:
        p.wait()
    return time.perf_counter() - t


def main():
    for kind, code in WORK.items():
        run(code, 1)  # imports warmed
        rounds = {1: [], 2: [], 3: []}
        for _ in range(ROUNDS):
            for k in rounds:
                rounds[k].append(run(code, k))
        alone = statistics.median(rounds[1])
        for k, times in rounds.items():
            median = statistics.median(times)
            print(json.dumps({
                "work": kind,
                "processes": k,
                "rounds_s": [round(t, 3) for t in times],
                "median_s": round(median, 3),
                "cores_delivered": round(k * alone / median, 2),
            }))


def loader_pace():
    import torch

    torch.set_num_threads(1)
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("loader_pairs", os.path.join(here, "record.py"))
    pairs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pairs)

    def per_batch_ms(dataset, workers):
        it = iter(torch.utils.data.DataLoader(dataset, batch_size=8, num_workers=workers))
        for _ in range(2 * workers + 2):  # the workers started, their first batches taken
            next(it)
        t = time.perf_counter()
        for _ in range(BATCHES):
            next(it)
        return (time.perf_counter() - t) * 1e3 / BATCHES

    for name, dataset in (("Sentences", pairs.Sentences()), ("HeavyImages", pairs.HeavyImages())):
        rounds = {0: [], 1: [], 2: []}
        for _ in range(LOADER_ROUNDS):
            for workers in rounds:
                rounds[workers].append(per_batch_ms(dataset, workers))
        for workers, times in rounds.items():
            print(json.dumps({
                "dataset": name,
                "workers": workers,
                "ms_per_batch_rounds": [round(t, 1) for t in times],
            }))


if __name__ == "__main__":
    main()
    loader_pace()
