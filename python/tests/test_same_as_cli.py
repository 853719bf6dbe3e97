"""Every Python result equals the CLI's `--json` document for the same input."""

from __future__ import annotations

import pytest

import stepcast
from conftest import (
    DATA,
    DLRM_JOB,
    NCCL,
    RESNET_AFTER,
    RESNET_BEFORE,
    SCENARIOS,
    TRACES,
    cli_json,
    trace_id,
)


@pytest.fixture(scope="module", params=TRACES, ids=trace_id)
def loaded(request):
    return request.param, stepcast.load(str(request.param))


def test_info(loaded):
    path, trace = loaded
    assert trace.info() == cli_json("info", path)


def test_replay(loaded):
    path, trace = loaded
    result = trace.replay()
    assert result["schema"].startswith("stepcast.replay/")
    assert result == cli_json("replay", path)


def test_analyze(loaded):
    path, trace = loaded
    result = trace.analyze()
    assert result["steps"], "a trace of testdata has steps"
    assert result == cli_json("analyze", path)


def test_advise(loaded):
    path, trace = loaded
    assert trace.advise() == cli_json("advise", path)
    assert trace.advise(peers="balanced") == cli_json("advise", path, "--peers", "balanced")


def test_advise_analyze_and_report_on_a_host_given():
    # A CPU-only loader trace: prefetch_inputs is predicted only with the host given.
    path = DATA / "stepcast/cpu-loader-pairs/loader-workers0.json.gz"
    trace = stepcast.load(str(path))
    host = ("--cores", 2, "--threads", 1)
    advice = trace.advise(cores=2, threads=1)
    assert advice == cli_json("advise", path, *host)
    assert advice["answer"]["change"]["name"] == "prefetch_inputs(cores=2,threads=1)"
    assert trace.advise() != advice
    assert trace.analyze(cores=2, threads=1) == cli_json("analyze", path, *host)


def test_analyze_and_replay_of_one_step():
    trace = stepcast.load(str(NCCL))
    number = trace.replay()["steps"][-1]["number"]
    assert trace.analyze(number) == cli_json("analyze", NCCL, "--step", number)
    assert trace.replay(step=number) == cli_json("replay", NCCL, "--step", number)


@pytest.mark.parametrize(
    "model, params, flags",
    [
        ("amp", {}, []),
        ("fused_optimizer", {"factor": 0.5}, ["--factor", "0.5"]),
        ("faster_hardware", {"compute": 2.0, "memory": 1.5}, ["--compute", "2", "--memory", "1.5"]),
        ("recompute", {"fraction": 0.25}, ["--fraction", "0.25"]),
        ("ddp", {"gpus": [8, 16, 32]}, ["--gpus", "8,16,32"]),
        ("ddp", {"gpus": 16, "net": "100Gbps", "fsdp": True}, ["--gpus", "16", "--net", "100Gbps", "--fsdp"]),
    ],
)
def test_whatif(model, params, flags):
    trace = stepcast.load(str(NCCL))
    result = trace.whatif(model, **params)
    assert result == cli_json("whatif", NCCL, model, *flags)
    # The loaded trace is not changed by a question (ddp names its inserted tasks in a copy).
    assert trace.info() == cli_json("info", NCCL)


def test_whatif_peers_and_scenario():
    trace = stepcast.load(str(RESNET_BEFORE))
    assert trace.whatif("remove_syncs", peers="balanced") == cli_json(
        "whatif", RESNET_BEFORE, "remove_syncs", "--peers", "balanced"
    )
    for scenario in sorted(SCENARIOS.glob("*.toml")):
        assert trace.whatif(scenario=str(scenario)) == cli_json(
            "whatif", RESNET_BEFORE, "--scenario", scenario
        ), scenario.name


def test_compare():
    expected = cli_json("compare", RESNET_BEFORE, RESNET_AFTER, "--model", "prefetch_inputs")
    # From paths, and from traces already loaded: the same document.
    assert stepcast.compare(str(RESNET_BEFORE), str(RESNET_AFTER), models=["prefetch_inputs"]) == expected
    before, after = stepcast.load(str(RESNET_BEFORE)), stepcast.load(str(RESNET_AFTER))
    assert stepcast.compare(before, after, models="prefetch_inputs") == expected
    assert stepcast.compare(before, after) == cli_json("compare", RESNET_BEFORE, RESNET_AFTER)


def test_job_folder():
    job = stepcast.load(str(DLRM_JOB))
    assert isinstance(job, stepcast.Job)
    assert len(job.files) == 8
    result = job.replay()
    assert result == cli_json("replay", DLRM_JOB)
    assert [rank["rank"] for rank in result["ranks"]] == list(range(8))
    # The job's files, listed one by one, are the same job.
    assert stepcast.load(job.files).replay() == result
    number = result["ranks"][0]["steps"][0]["number"]
    assert job.replay(step=number) == cli_json("replay", DLRM_JOB, "--step", number)


def test_a_trace_joined_with_its_execution_trace():
    inputs = DATA / "param/et_replay/tests/inputs"
    kineto, et = inputs / "linear_kineto.json.gz", inputs / "linear_et.json.gz"
    trace = stepcast.load(kineto, et=et)
    assert trace.replay() == cli_json("replay", kineto, "--et", et)
    assert trace.info()["execution_trace"]["data_links"] > 0
    assert trace.whatif("kernel_fusion") == cli_json(
        "whatif", kineto, "kernel_fusion", "--et", et
    )
    with pytest.raises(ValueError, match="Execution Trace of one run"):
        stepcast.load(inputs, et=et)
