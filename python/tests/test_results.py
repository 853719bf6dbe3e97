"""Results as dicts and DataFrames, progress, and the GIL released during work."""

from __future__ import annotations

import threading

import pytest

import stepcast
from conftest import DLRM_JOB, NCCL, RESNET_AFTER, RESNET_BEFORE, cli_json, run_cli


@pytest.fixture(scope="module")
def trace():
    return stepcast.load(str(NCCL))


def test_results_are_plain_dicts(trace):
    result = trace.analyze()
    assert isinstance(result, dict)
    assert result.schema == "stepcast.analyze/1"
    assert result["steps"][0]["number"] == cli_json("analyze", NCCL)["steps"][0]["number"]
    # Deterministic: the same question twice gives the same answer.
    assert trace.analyze() == result
    assert repr(trace) == f"stepcast.Trace({str(NCCL)!r})"


def test_tables(trace):
    tables = trace.analyze().tables()
    assert "steps" in tables
    assert "statistics.top_kernels" in tables
    assert "candidates" in trace.advise().tables()


def _csv_files(out, *args):
    """The tables `stepcast ARGS --format csv -o OUT` writes, by name (file name less `.csv`)."""
    done = run_cli(*args, "--format", "csv", "-o", out)
    assert done.returncode == 0, done.stderr
    return {p.name[: -len(".csv")] for p in out.iterdir() if p.name.endswith(".csv")}


def test_tables_are_the_csv_files(trace, tmp_path):
    pandas = pytest.importorskip("pandas")
    job = stepcast.load(DLRM_JOB)
    cases = [
        (trace.analyze(), ("analyze", NCCL)),
        (trace.advise(), ("advise", NCCL)),
        (trace.replay(), ("replay", NCCL)),
        (job.replay(), ("replay", DLRM_JOB)),
        (stepcast.compare(RESNET_BEFORE, RESNET_AFTER), ("compare", RESNET_BEFORE, RESNET_AFTER)),
    ]
    for number, (result, args) in enumerate(cases):
        tables = result.tables()
        assert set(tables) == _csv_files(tmp_path / f"csv-{number}", *args), args
        for name in tables:
            frame = result.to_pandas(name)
            assert isinstance(frame, pandas.DataFrame), (args, name)
    # A notebook's view: short, with the answer first.
    analysis = trace.analyze()
    assert len(repr(analysis)) < 1000
    assert analysis.answer and analysis.answer[:100] in repr(analysis)
    assert analysis.answer[:50] in analysis._repr_html_()


def test_to_pandas(trace):
    pandas = pytest.importorskip("pandas")
    analysis = trace.analyze()
    steps = analysis.to_pandas()
    assert isinstance(steps, pandas.DataFrame)
    assert list(steps["number"]) == [step["number"] for step in analysis["steps"]]
    # Nested fields become dotted columns, with the JSON's values.
    assert list(steps["host_device.idle_ns"]) == [
        step["host_device"]["idle_ns"] for step in analysis["steps"]
    ]
    kernels = analysis.to_pandas("statistics.top_kernels")
    assert kernels["total_ns"].sum() == sum(k["total_ns"] for k in analysis["statistics"]["top_kernels"])
    advice = trace.advise().to_pandas()
    assert list(advice["name"]) == [c["name"] for c in trace.advise()["candidates"]]
    replay = trace.replay().to_pandas()
    assert list(replay["measured_ns"]) == [s["measured_ns"] for s in trace.replay()["steps"]]
    sweep = trace.whatif("ddp", gpus=[8, 16]).to_pandas("sweep")
    assert len(sweep) == 2
    with pytest.raises(KeyError, match="not in the document"):
        analysis.to_pandas("no.such.table")
    with pytest.raises(KeyError, match="is not a table"):
        analysis.to_pandas("schema")


def test_progress_callback():
    updates = []
    trace = stepcast.load(str(NCCL), progress=lambda *update: updates.append(update))
    assert updates[0] == (f"loading {NCCL}", 0, 2)
    assert updates[-1] == (f"loading {NCCL}", 2, 2)
    updates.clear()
    trace.advise()  # the trace's callback stays the default of its questions
    assert updates == [("advising", 0, 1), ("advising", 1, 1)]
    updates.clear()
    trace.analyze(progress=False)
    assert updates == []


def test_progress_callback_errors_are_raised():
    def fail(stage, done, total):
        raise RuntimeError(f"stop at {stage}")

    with pytest.raises(RuntimeError, match="stop at loading"):
        stepcast.load(str(NCCL), progress=fail)


def test_progress_with_tqdm(capsys):
    pytest.importorskip("tqdm")
    trace = stepcast.load(str(NCCL), progress=True)
    assert trace.replay(progress=True) == cli_json("replay", NCCL)


def test_gil_is_released_during_work():
    # While the engine works in one thread, another thread keeps running Python. With the
    # GIL held through the work, the main thread would not run between the worker's first
    # progress update and its return.
    trace = stepcast.load(str(RESNET_BEFORE))
    started, finished = threading.Event(), threading.Event()
    results = {}

    def work():
        results["advice"] = trace.advise(progress=lambda stage, done, total: started.set())
        finished.set()

    worker = threading.Thread(target=work)
    worker.start()
    assert started.wait(60)
    spins = 0
    while not finished.is_set():
        spins += 1
    worker.join()
    assert spins > 1000, f"the main thread ran only {spins} times while advise worked"
    assert results["advice"] == cli_json("advise", RESNET_BEFORE)


def test_top_none_keeps_every_row(trace):
    every = trace.analyze(top=None)
    assert every == cli_json("analyze", NCCL, "--top", "all")
    default = trace.analyze()
    assert len(every["statistics"]["top_kernels"]) > len(default["statistics"]["top_kernels"]) == 20
    with pytest.raises(ValueError, match="top"):
        trace.analyze(top=0)


def test_job_analyze_is_each_ranks_analysis():
    job = stepcast.load(DLRM_JOB)
    analyses = job.analyze()
    assert analyses.ranks == list(range(len(job.files)))
    # Each rank's document is the CLI's analyze of its trace.
    for rank in (0, analyses.ranks[-1]):
        document = analyses[rank]
        assert document == cli_json("analyze", document["trace"]["file"])
        assert document["trace"]["rank"] == rank
    pytest.importorskip("pandas")
    frame = analyses.to_pandas()
    assert frame["rank"].tolist() == analyses.ranks
    assert frame["answer.step_ns"].tolist() == [
        analyses[rank]["answer"]["step_ns"] for rank in analyses.ranks
    ]
    kernels = analyses.to_pandas("statistics.top_kernels")
    assert len(kernels) == sum(
        len(analyses[rank]["statistics"]["top_kernels"]) for rank in analyses.ranks
    )
    assert "stepcast.RankAnalyses(8 ranks" in repr(analyses)


def test_op_model_frames_are_the_documents():
    from conftest import DATA

    pytest.importorskip("pandas")
    analysis = stepcast.load(str(DATA / "stepcast/h100-pairs/transformer-fp32.json.gz")).analyze()
    ops = analysis.to_pandas("op_model.ops")
    assert ops["name"].tolist() == [op["name"] for op in analysis["op_model"]["ops"]]
    assert ops["tflops"].tolist() == pytest.approx([op["tflops"] for op in analysis["op_model"]["ops"]])
    kinds = analysis.to_pandas("op_model.categories")
    assert kinds["name"].tolist() == [c["name"] for c in analysis["op_model"]["categories"]]
    assert kinds["share"].sum() == pytest.approx(1.0)
    steps = analysis.to_pandas("op_model.steps")
    assert steps["mfu"].tolist() == pytest.approx([s["mfu"] for s in analysis["op_model"]["steps"]])
