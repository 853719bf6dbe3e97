"""Records the DataLoader pairs beside this script on this machine's CPU: the same training step
fed by a `DataLoader` with 0, 1, 2 and 4 worker processes, each traced with the PyTorch
profiler (Kineto, CPU activity only) and timed with the profiler off, interleaved.

    python3 record.py OUTDIR loader workers0 workers1 workers2 workers4

The workload (`small_cnn` trained with SGD on batches of 8 images that the dataset makes and
preprocesses on the CPU), the tracing and the interleaved timing are `../cpu-pairs/record.py`'s
(imported, not copied); only the worker counts are this script's: `workersN` for any N.
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu-pairs"))
import record as cpu_pairs  # noqa: E402


def make_config(workload, variant):
    assert workload == "loader" and variant.startswith("workers"), variant
    torch.manual_seed(0)
    workers = int(variant.removeprefix("workers"))
    model = cpu_pairs.small_cnn()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = torch.utils.data.DataLoader(cpu_pairs.Images(), batch_size=8, num_workers=workers)
    it = iter(loader)

    def step():
        img, label = next(it)
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(img), label).backward()
        opt.step()

    # The workers' prefetched batches (2 per worker) are used up before a timed round.
    return cpu_pairs.Config(f"loader-{variant}", step, lead_in=2 * workers + 2)


if __name__ == "__main__":
    outdir, workload, variants = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(outdir, exist_ok=True)
    cpu_pairs.make_config = make_config
    cpu_pairs.record_workload(outdir, workload, variants)
