"""`stepcast.distributed`: a job's ranks reduced on a Dask cluster (a `LocalCluster` of two
worker processes here), replayed in this process, and held to the CLI's `replay DIR --json`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import stepcast
from conftest import DATA, DLRM_JOB, cli_error, cli_json, run_cli

distributed = pytest.importorskip(
    "distributed", reason="dask.distributed is not installed (pip install './python[dask]')"
)
import stepcast.distributed as sd  # noqa: E402

# A real job recorded on this project's CPU: the MLP under DistributedDataParallel over gloo,
# two processes (testdata/kineto/stepcast/cpu-pairs/README.md).
GLOO_JOB = DATA / "stepcast/cpu-pairs/ddp-gloo2"


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    with distributed.Client(cluster) as dask_client:
        yield dask_client
    cluster.close()


@pytest.mark.parametrize("job", [DLRM_JOB, GLOO_JOB], ids=["dlrm", "gloo"])
def test_a_job_reduced_on_dask_is_the_clis_document(client, job, tmp_path):
    stages = []
    result = sd.replay(job, client, progress=lambda *update: stages.append(update))
    assert dict(result) == cli_json("replay", job)
    files = sorted(p.name for p in Path(job).iterdir())
    assert ("reducing ranks", len(files), len(files)) in stages

    # Kept in a folder: the workers' files are `stepcast reduce`'s, byte for byte, and the
    # CLI replays that folder to the same document.
    kept = tmp_path / "kept"
    assert dict(sd.replay(str(Path(job) / "*"), client, output=kept)) == cli_json("replay", job)
    by_cli = tmp_path / "by-cli"
    assert run_cli("reduce", job, "-o", by_cli).returncode == 0
    names = sorted(p.name for p in kept.iterdir())
    assert names == [f"{name}.stepcast-rank" for name in files]
    for name in names:
        assert (kept / name).read_bytes() == (by_cli / name).read_bytes(), name
    assert cli_json("replay", kept) == cli_json("replay", job)
    # stepcast.load reads the folder as the job its traces are.
    assert dict(stepcast.load(kept).replay()) == cli_json("replay", job)


def test_a_jobs_execution_traces_are_joined_on_the_workers(client, tmp_path):
    # DLRM's rank 0 ET beside the ranks' folder, and an ET of another run (no rank's
    # process): the CLI joins the first with its rank and lists the second as unmatched.
    ets = DATA / "param/et_replay/tests/inputs/dlrm_pytorch_et__extracted/dlrm_pytorch_et"
    stray = DATA / "param/et_replay/tests/inputs/linear_et.json.gz"
    cli = cli_json("replay", DLRM_JOB, ets, stray)
    assert [e["rank"] for e in cli["execution_traces"]] == [0]
    assert cli["execution_traces_unmatched"] == [str(stray)]
    assert dict(sd.replay([DLRM_JOB, ets, stray], client)) == cli
    # Reduced into a folder by the workers: the CLI replays it to the same joins.
    kept = tmp_path / "kept"
    sd.reduce([DLRM_JOB, ets], client, output=kept)
    assert cli_json("replay", kept)["execution_traces"] == cli["execution_traces"]


def test_an_unreadable_rank_is_named_or_left_out_and_listed(client, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(DLRM_JOB, job)
    broken = job / "worker2_step_12.1694128201554.pt.trace.json"
    broken.write_text('{"traceEvents": [')
    with pytest.raises(stepcast.StepcastError) as raised:
        sd.replay(job, client)
    assert str(raised.value) == cli_error("replay", job)
    assert "worker2_step_12" in str(raised.value)
    # Written by the workers into a folder: all or nothing.
    out = tmp_path / "out"
    with pytest.raises(stepcast.StepcastError, match="worker2_step_12"):
        sd.reduce(job, client, output=out)
    assert list(out.iterdir()) == []

    result = sd.replay(job, client, skip_unreadable=True)
    assert dict(result) == cli_json("replay", job, "--skip-unreadable")
    assert result["missing_ranks"] == [2]
    assert [u["file"] for u in result["unreadable"]] == [str(broken)]


def test_a_folder_of_other_ranks_is_not_written_into(client, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "stranger.json.stepcast-rank").write_bytes(b"STEPCRNK")
    with pytest.raises(stepcast.StepcastError, match="already holds reduced ranks"):
        sd.replay(DLRM_JOB, client, output=out)
    assert [p.name for p in out.iterdir()] == ["stranger.json.stepcast-rank"]
    with pytest.raises(stepcast.StepcastError, match="matches no file"):
        sd.replay(str(tmp_path / "nothing-*.json"), client)
