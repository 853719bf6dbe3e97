"""Records the DataLoader pairs beside this script on this machine's CPU: the same training step
fed by a `DataLoader` with 0, 1, 2 and 4 worker processes, each traced with the PyTorch
profiler (Kineto, CPU activity only) and timed with the profiler off, interleaved.

    python3 record.py OUTDIR loader workers0 workers1 workers2 workers4
    python3 record.py OUTDIR heavyloader workers0 workers1 workers2 workers4
    python3 record.py OUTDIR loader2t workers0 workers1 workers2
    python3 record.py OUTDIR textloader workers0 workers1 workers2 workers4
    python3 record.py OUTDIR steady-heavyloader workers0 workers1 workers2 workers4

The workload (`small_cnn` trained with SGD on batches of 8 images that the dataset makes and
preprocesses on the CPU), the tracing and the interleaved timing are `../cpu-pairs/record.py`'s
(imported, not copied); the worker counts are this script's (`workersN` for any N), and two
variations of the workload: `heavyloader` makes 224 × 224 images instead of 128 × 128 (about
three times the loading per batch), and `loader2t` trains on two intra-op threads
(`torch.set_num_threads(2)`) instead of one.

`textloader` is another program: a text classifier (an embedding, one transformer encoder
layer, mean pooling, a linear head) trained on sentences the dataset makes and tokenizes in
plain Python (`Sentences`: string joins, splits, dictionary lookups, bigram hashing), so its
loading is untraced Python under the GIL rather than tensor ops. It is recorded with the
*steady protocol*, as is `steady-heavyloader` (the `heavyloader` workload again): before a
configuration is traced and before each timed round its `DataLoader` iterator is made afresh
(every other configuration's shut down, so no idle worker fills its queue meanwhile), and the
trace waits `2 × w + 2` steps (w the largest worker count of the run) before its warmup
(`STEADY_SCHEDULE`), with 10 active steps. Made once and left idle while the other
configurations ran, a loader's workers fill their prefetch queues (2 batches each), and a
trace or round that starts on a full queue measures the queue draining as well as the workers'
pace (the first recordings' AFTER traces with 4 workers ran faster than two cores could run
BEFORE's traced loading).
"""


import os
import random
import sys

import torch
import torch.nn as nn
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


WORDS = [f"w{i}" + "abcdefghij"[i % 10] * (1 + i % 5) for i in range(20000)]
VOCAB = {w: i + 1 for i, w in enumerate(WORDS[:8000])}
SENTENCE_WORDS = 7000
TOKENS = 128
BUCKETS = 8192


class Sentences(torch.utils.data.Dataset):
    """A sentence of `SENTENCE_WORDS` words drawn from `WORDS`, tokenized in Python: lower-cased,
    split, looked up in `VOCAB` (0 for unknown), hashed into bigram buckets, cut to `TOKENS`."""

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        rng = random.Random(i)
        text = " ".join(rng.choice(WORDS).upper() for _ in range(SENTENCE_WORDS))
        ids = [VOCAB.get(t, 0) for t in text.lower().split()]
        ids = [(a * 31 + b) % BUCKETS for a, b in zip(ids, ids[1:])]
        return torch.tensor(ids[:TOKENS]), i % 2


class TextClassifier(nn.Module):
    """An embedding of the bigram buckets, one encoder layer (d_model 128, 4 heads, FFN 512),
    mean pooling and a linear head of two classes."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(BUCKETS, 128)
        layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(128, 2)

    def forward(self, ids):
        return self.head(self.encoder(self.embed(ids)).mean(1))


# The workloads recorded with the steady protocol, and its trace schedule (`wait` set per run
# from the largest worker count).
STEADY_WORKLOADS = ("textloader", "steady-heavyloader")
STEADY_SCHEDULE = dict(wait=10, warmup=3, active=10)


def make_config(workload, variant):
    if workload in STEADY_WORKLOADS:
        return make_steady_config(workload, variant)
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


def make_steady_config(workload, variant):
    """A configuration whose loader iterator `open()` makes afresh and `close()` shuts down with
    its workers (the steady protocol)."""
    assert variant.startswith("workers"), variant
    torch.manual_seed(0)
    workers = int(variant.removeprefix("workers"))
    if workload == "textloader":
        model, dataset = TextClassifier(), Sentences()
    else:
        model, dataset = cpu_pairs.small_cnn(), HeavyImages()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = torch.utils.data.DataLoader(dataset, batch_size=8, num_workers=workers)
    state = {"it": None}

    def step():
        if state["it"] is None:
            state["it"] = iter(loader)
        x, label = next(state["it"])
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), label).backward()
        opt.step()

    def close():
        # Dropping a multi-process iterator shuts its workers down and joins them.
        state["it"] = None

    config = cpu_pairs.Config(f"{workload}-{variant}", step, threads=1, lead_in=2 * workers + 2)
    config.close = close
    STEADY_CONFIGS.append(config)
    return config


# Every configuration made with the steady protocol in this process.
STEADY_CONFIGS = []


def alone_afresh(run):
    """`run(config, ...)` with no other configuration's workers alive and the config's own
    iterator made afresh by its first step, shut down after."""

    def wrapped(*args, **kwargs):
        for config in STEADY_CONFIGS:
            config.close()
        try:
            return run(*args, **kwargs)
        finally:
            for config in STEADY_CONFIGS:
                config.close()

    return wrapped


if __name__ == "__main__":
    outdir, workload, variants = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(outdir, exist_ok=True)
    cpu_pairs.make_config = make_config
    if workload in STEADY_WORKLOADS:
        most = max(int(v.removeprefix("workers")) for v in variants)
        cpu_pairs.SCHEDULE = dict(STEADY_SCHEDULE, wait=2 * most + 2)
        cpu_pairs.trace = alone_afresh(cpu_pairs.trace)
        cpu_pairs.timed_round = alone_afresh(cpu_pairs.timed_round)
    cpu_pairs.record_workload(outdir, workload, variants)
