"""Records the optimizer pairs beside this script on this machine's CPU: the same training step
with its optimizer's update run per parameter tensor (`foreach=False`), per list of tensors
(`foreach=True`) and in one fused kernel (`fused=True`), each traced with the PyTorch profiler
(Kineto, CPU activity only) and timed with the profiler off, interleaved.

    python3 record.py [--no-shapes] OUTDIR WORKLOAD VARIANT [VARIANT ...]

`--no-shapes` traces with `record_shapes=False` (the profiler's default, what most users'
traces are) and names each configuration `<workload>-<variant>-noshapes`.

The tracing and the interleaved timing are `../cpu-pairs/record.py`'s (imported, not copied):
schedule wait 2 / warmup 3 / active 6 with `record_shapes=True`, one intra-op thread, 7 rounds
of 15 steps, every variant of a workload once per round, the order rotated. A variant is
`<optimizer>-<implementation>`; its configuration `<workload>-<variant>`.
"""

import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu-pairs"))
import record as cpu_pairs  # noqa: E402

OPTIMIZERS = {
    "adam": lambda params, **kw: torch.optim.Adam(params, lr=1e-4, **kw),
    "adamw": lambda params, **kw: torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, **kw),
    "sgd": lambda params, **kw: torch.optim.SGD(params, lr=1e-2, momentum=0.9, **kw),
    "adagrad": lambda params, **kw: torch.optim.Adagrad(params, lr=1e-2, **kw),
    "amsgrad": lambda params, **kw: torch.optim.Adam(params, lr=1e-4, amsgrad=True, **kw),
}
IMPLEMENTATIONS = {
    "loop": {"foreach": False},
    "foreach": {"foreach": True},
    "fused": {"fused": True},
}


def wide_mlp():
    """4 linear layers of width 1024, batch 32: 8 parameter tensors of up to 1 M elements each
    (the update's arithmetic, not its dispatch, is most of its time)."""
    layers = []
    for _ in range(4):
        layers += [nn.Linear(1024, 1024), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    return model, (torch.randn(32, 1024), torch.randn(32, 1024)), F.mse_loss


def gelu_mlp():
    """6 linear layers of width 768 with GELU, batch 64: 12 parameter tensors of up to 590 k
    elements, every unit alive (no exact zeros in Adam's state, whose CPU `sqrt` slows on them:
    `zeros_in_sqrt.py`)."""
    layers = []
    for _ in range(6):
        layers += [nn.Linear(768, 768), nn.GELU()]
    model = nn.Sequential(*layers[:-1])
    return model, (torch.randn(64, 768), torch.randn(64, 768)), F.mse_loss


class EmbeddingMlp(nn.Module):
    """A bag of 16 token embeddings (vocabulary 50 000, width 128, a dense gradient) averaged,
    then 128 → 256 → 10: one 6.4 M-element table, most of whose rows no batch touches."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(50_000, 128)
        self.head = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10))

    def forward(self, tokens):
        return self.head(self.embedding(tokens).mean(dim=1))


def embedding_mlp():
    """`EmbeddingMlp`, batch 64 of 16 tokens, cross entropy over 10 classes."""
    tokens = torch.randint(0, 50_000, (64, 16))
    return EmbeddingMlp(), (tokens, torch.randint(0, 10, (64,))), F.cross_entropy


class Lstm(nn.Module):
    """A 2-layer LSTM (input 64, hidden 256) and a linear head on its last output."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(64, 256, num_layers=2, batch_first=True)
        self.head = nn.Linear(256, 10)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])


def lstm():
    """`Lstm`, batch 16 of 32 steps: 10 parameter tensors of up to 262 k elements."""
    return Lstm(), (torch.randn(16, 32, 64), torch.randint(0, 10, (16,))), F.cross_entropy


WORKLOADS = {
    "embmlp": embedding_mlp,
    "lstm": lstm,
    "mlp": cpu_pairs.mlp,
    "gelumlp": gelu_mlp,
    "widemlp": wide_mlp,
    "cnn": cpu_pairs.cnn,
    "transformer": cpu_pairs.transformer,
}


SUFFIX = ""


def make_config(workload, variant):
    torch.manual_seed(0)
    optimizer, implementation = variant.split("-")
    model, batch, loss_fn = WORKLOADS[workload]()
    opt = OPTIMIZERS[optimizer](model.parameters(), **IMPLEMENTATIONS[implementation])
    step = cpu_pairs.training_step(model, batch, loss_fn, opt)
    return cpu_pairs.Config(f"{workload}-{variant}{SUFFIX}", step)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--no-shapes":
        args = args[1:]
        cpu_pairs.RECORD_SHAPES = False
        SUFFIX = "-noshapes"
    outdir, workload, variants = args[0], args[1], args[2:]
    os.makedirs(outdir, exist_ok=True)
    cpu_pairs.make_config = make_config
    cpu_pairs.record_workload(outdir, workload, variants)
