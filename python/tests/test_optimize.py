"""`optimize` (and a job's `whatif` and `advise`) from Python: the CLI's `--json` document for
the same input (the search is deterministic when it converges within its time limit), and the
CLI's messages for bad options."""

from __future__ import annotations

import pytest

import stepcast
from conftest import DATA, DLRM_JOB, NCCL, cli_error, cli_json

DF_INDEX = DATA / "HolisticTraceAnalysis/tests/data/df_index_resolver/df_index_resolver.json.gz"


def raised(call) -> str:
    with pytest.raises(stepcast.StepcastError) as error:
        call()
    return str(error.value)


@pytest.mark.parametrize("path", [NCCL, DF_INDEX], ids=lambda p: p.parent.name)
def test_optimize_same_as_cli(path):
    result = stepcast.load(str(path)).optimize()
    assert result["schema"] == "stepcast.optimize/1"
    assert result == cli_json("optimize", path)


def test_optimize_options_same_as_cli():
    trace = stepcast.load(str(NCCL))
    assert trace.optimize(passes="op_fusion,memory", peers="balanced") == cli_json(
        "optimize", NCCL, "--passes", "op_fusion,memory", "--peers", "balanced"
    )
    assert trace.optimize(memory_budget=80, passes=["tensor_fusion"]) == cli_json(
        "optimize", NCCL, "--memory-budget", "80", "--passes", "tensor_fusion"
    )


def test_optimize_job_folder_same_as_cli():
    stages = []
    result = stepcast.load(str(DLRM_JOB)).optimize(progress=lambda *update: stages.append(update))
    assert result == cli_json("optimize", DLRM_JOB)
    assert len(result["traces"]) > 1
    assert stages, "progress was reported"


def test_optimize_bad_options():
    trace = stepcast.load(str(NCCL))
    assert raised(lambda: trace.optimize(passes="bogus")) == cli_error(
        "optimize", NCCL, "--passes", "bogus"
    )
    assert raised(lambda: trace.optimize(passes=["op_fusion", "bogus"])) == cli_error(
        "optimize", NCCL, "--passes", "op_fusion,bogus"
    )
    assert raised(lambda: trace.optimize(memory_budget=0)) == cli_error(
        "optimize", NCCL, "--memory-budget", "0"
    )
    assert raised(lambda: trace.optimize(time_limit=-1)) == cli_error(
        "optimize", NCCL, "--time-limit=-1"
    )
    assert "skew or balanced" in raised(lambda: trace.optimize(peers="sometimes"))
    job = stepcast.load(str(DLRM_JOB))
    assert raised(lambda: job.optimize(passes="bogus")) == cli_error(
        "optimize", DLRM_JOB, "--passes", "bogus"
    )


def test_optimize_argument_errors():
    trace = stepcast.load(str(NCCL))
    with pytest.raises(TypeError, match="unexpected keyword argument 'pases'"):
        trace.optimize(pases="memory")
    with pytest.raises(TypeError, match="unexpected keyword argument 'pases'"):
        stepcast.load(str(DLRM_JOB)).optimize(pases="memory")


def test_whatif_and_advise_of_a_job_same_as_cli():
    job = stepcast.load(str(DLRM_JOB))
    result = job.whatif("cuda_graphs")
    assert result["schema"] == "stepcast.whatif-job/1"
    assert result == cli_json("whatif", DLRM_JOB, "cuda_graphs")
    assert job.whatif("faster_hardware", cpu=2) == cli_json(
        "whatif", DLRM_JOB, "faster_hardware", "--cpu", "2"
    )
    assert job.advise() == cli_json("advise", DLRM_JOB)
    assert job.advise(cores=2, threads=1) == cli_json(
        "advise", DLRM_JOB, "--cores", 2, "--threads", 1
    )
