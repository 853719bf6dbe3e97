"""Shared by the tests: where the repository's traces are, and the `stepcast` binary that is
the reference every Python result is held to (its `--json` output for the same input)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "testdata" / "kineto"

# Real traces from testdata/ (provenance in testdata/README.md), chosen to cover a CUDA DDP
# rank, ROCm, a CPU-only run and the ResNet-50 before/after pair, while keeping the suite short.
NCCL = DATA / "HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz"
AMD = DATA / "HolisticTraceAnalysis/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"
CPU_ONLY = (
    DATA / "HolisticTraceAnalysis/@b8cce2cd/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
)
SAMPLES = DATA / "kineto/tb_plugin/samples"
RESNET_BEFORE = SAMPLES / "resnet50_profiler_api_num_workers_0/worker0.pt.trace.json.gz"
RESNET_AFTER = SAMPLES / "resnet50_profiler_api_num_workers_4/worker0.pt.trace.json.gz"
DLRM_JOB = DATA / "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto"
SCENARIOS = REPO / "examples" / "scenarios"

TRACES = [NCCL, AMD, CPU_ONLY, RESNET_BEFORE]


def trace_id(path: Path) -> str:
    return path.parent.name


def binary() -> Path:
    """The CLI built from this checkout (`.ci/test` builds it; STEPCAST_BIN overrides)."""
    path = Path(os.environ.get("STEPCAST_BIN", REPO / "target" / "release" / "stepcast"))
    if not path.is_file():
        pytest.fail(f"no stepcast binary at {path}: run `cargo build --release` (or .ci/test)")
    return path


def run_cli(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(binary()), *map(str, args)], capture_output=True, text=True, check=False
    )


def cli_json(*args: object) -> dict:
    """`stepcast ARGS --json`, parsed; the command must succeed."""
    done = run_cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def cli_error(*args: object) -> str:
    """The one-line message of a failing `stepcast ARGS`, without its `stepcast: error: `."""
    done = run_cli(*args)
    assert done.returncode != 0, f"stepcast {args} succeeded"
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    prefix = "stepcast: error: "
    assert lines[0].startswith(prefix), lines[0]
    return lines[0][len(prefix):]
