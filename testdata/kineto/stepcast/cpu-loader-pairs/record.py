"""Records the DataLoader pairs beside this script on this machine's CPU: the same training step
fed by a `DataLoader` with 0, 1, 2 and 4 worker processes, each traced with the PyTorch
profiler (Kineto, CPU activity only) and timed with the profiler off, interleaved.

    python3 record.py OUTDIR loader workers0 workers1 workers2 workers4
    python3 record.py OUTDIR heavyloader workers0 workers1 workers2 workers4
    python3 record.py OUTDIR loader2t workers0 workers1 workers2

The workload (`small_cnn` trained with SGD on batches of 8 images that the dataset makes and
preprocesses on the CPU), the tracing and the interleaved timing are `../cpu-pairs/record.py`'s
(imported, not copied); the worker counts are this script's (`workersN` for any N), and two
variations of the workload: `heavyloader` makes 224 × 224 images instead of 128 × 128 (about
three times the loading per batch), and `loader2t` trains on two intra-op threads
(`torch.set_num_threads(2)`) instead of one.
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu-pairs"))
import record as cpu_pairs  # noqa: E402


class HeavyImages(cpu_pairs.Images):
    """`Images` made at 224 × 224 and cropped around the centre to 32 × 32."""

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.rand(3, 224, 224, generator=g)
        img = F.avg_pool2d(img.unsqueeze(0), 9, stride=1, padding=4).squeeze(0)
        img = img[:, 96:128, 96:128]
        if i % 2:
            img = img.flip(-1)
        img = (img - 0.45) / 0.225
        return img, i % 10


def make_config(workload, variant):
    assert workload in ("loader", "heavyloader", "loader2t"), workload
    assert variant.startswith("workers"), variant
    torch.manual_seed(0)
    workers = int(variant.removeprefix("workers"))
    model = cpu_pairs.small_cnn()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    dataset = HeavyImages() if workload == "heavyloader" else cpu_pairs.Images()
    loader = torch.utils.data.DataLoader(dataset, batch_size=8, num_workers=workers)
    it = iter(loader)

    def step():
        img, label = next(it)
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(img), label).backward()
        opt.step()

    # The workers' prefetched batches (2 per worker) are used up before a timed round.
    threads = 2 if workload == "loader2t" else 1
    return cpu_pairs.Config(f"{workload}-{variant}", step, threads=threads, lead_in=2 * workers + 2)


if __name__ == "__main__":
    outdir, workload, variants = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(outdir, exist_ok=True)
    cpu_pairs.make_config = make_config
    cpu_pairs.record_workload(outdir, workload, variants)
