"""Bad input raises StepcastError with the CLI's one-line message; never a crash."""

from __future__ import annotations

import gzip

import pytest

import stepcast
from conftest import DLRM_JOB, NCCL, REPO, cli_error


def raised(call) -> str:
    with pytest.raises(stepcast.StepcastError) as error:
        call()
    return str(error.value)


def test_missing_file(tmp_path):
    path = str(tmp_path / "missing.json")
    assert raised(lambda: stepcast.load(path)) == cli_error("info", path)


@pytest.mark.parametrize(
    "name, content",
    [
        ("empty.json", b""),
        ("broken.json", b'{"traceEvents": [{"ph": "X", "ts": '),
        ("not_a_trace.json", b'{"hello": "world"}'),
        ("garbage.json.gz", b"\x1f\x8b\x08\x00garbage"),
        ("binary.json", bytes(range(256)) * 4),
    ],
)
def test_unreadable_file(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    message = raised(lambda: stepcast.load(str(path)))
    assert str(path) in message
    assert message == cli_error("info", path)


def test_a_file_that_is_not_kineto():
    # An Execution Trace from testdata: recognized and named, not replayed.
    path = REPO / "testdata/kineto/param/et_replay/tests/inputs/dlrm_pytorch_et__extracted/dlrm_pytorch_et/dlrm_eg_0.json"
    assert raised(lambda: stepcast.load(str(path))) == cli_error("info", path)


def test_bad_requests():
    trace = stepcast.load(str(NCCL))
    assert raised(lambda: trace.analyze(step=999)) == cli_error("analyze", NCCL, "--step", 999)
    assert raised(lambda: trace.replay(step=999)) == cli_error("replay", NCCL, "--step", 999)
    assert raised(lambda: trace.whatif("no_such_model")) == cli_error("whatif", NCCL, "no_such_model")
    assert raised(lambda: trace.whatif("amp", factor=0.5)) == cli_error("whatif", NCCL, "amp", "--factor", "0.5")
    assert raised(lambda: trace.whatif("ddp", gpus="0")) == cli_error("whatif", NCCL, "ddp", "--gpus", "0")
    assert raised(lambda: trace.whatif("ddp", net="fast")) == cli_error("whatif", NCCL, "ddp", "--net", "fast")
    assert raised(lambda: stepcast.compare(trace, trace, models=["ddp"])) == cli_error(
        "compare", NCCL, NCCL, "--model", "ddp"
    )
    assert "skew or balanced" in raised(lambda: trace.advise(peers="sometimes"))
    for bad in (0, -1, 2.5, True, 2**32):
        with pytest.raises(ValueError, match="cores must be a positive count"):
            trace.advise(cores=bad)
        with pytest.raises(ValueError, match="threads must be a positive count"):
            trace.analyze(threads=bad)
    assert "give one or the other" in raised(
        lambda: trace.whatif("amp", scenario=str(REPO / "examples/scenarios/faster_host.toml"))
    )
    assert raised(lambda: stepcast.load(str(DLRM_JOB)).replay(step=999)) == cli_error(
        "replay", DLRM_JOB, "--step", 999
    )


def test_missing_scenario(tmp_path):
    path = tmp_path / "missing.toml"
    trace = stepcast.load(str(NCCL))
    assert raised(lambda: trace.whatif(scenario=path)) == cli_error("whatif", NCCL, "--scenario", path)


def test_empty_folder(tmp_path):
    assert raised(lambda: stepcast.load(str(tmp_path))) == cli_error("replay", tmp_path)


def test_python_argument_errors():
    trace = stepcast.load(str(NCCL))
    with pytest.raises(TypeError, match="unexpected keyword argument 'factr'"):
        trace.whatif("fused_optimizer", factr=0.5)
    with pytest.raises(TypeError, match="bad `factor`"):
        trace.whatif("fused_optimizer", factor="half")
    with pytest.raises(TypeError, match="progress must be"):
        trace.analyze(progress=3)


def test_gzip_of_nothing_trace(tmp_path):
    path = tmp_path / "empty.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    assert raised(lambda: stepcast.load(str(path))) == cli_error("info", path)
