"""Replay, analyze and predict PyTorch training steps from profiler traces.

``load(path)`` reads a trace (or a job folder of one trace per rank) once; its methods run the
same code as the ``stepcast`` command line and return its ``--json`` documents as dicts
(``Result``, with ``to_pandas()``). See ``docs/json-schema.md`` for every field.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Iterable, Optional, Sequence, Union

from . import _native
from ._native import StepcastError
from ._progress import Progress, progress_callback
from ._ranks import RankAnalyses
from ._results import Result

__all__ = ["Job", "RankAnalyses", "Result", "StepcastError", "Trace", "compare", "load"]

PathLike = Union[str, "os.PathLike[str]"]


def _result(text: str) -> Result:
    return Result.from_json(text)


class _Loaded:
    """What ``load`` gives: the native object and the progress its methods report to."""

    def __init__(self, native: Any, progress: Progress = None) -> None:
        self._native = native
        self._progress = progress

    def _callback(self, progress: Progress) -> Optional[Callable[[str, int, int], Any]]:
        return progress_callback(self._progress if progress is None else progress)


class Trace(_Loaded):
    """One trace, read and its graph built once; every question reuses them."""

    @property
    def path(self) -> str:
        """The path as given to ``load``."""
        return self._native.path

    def __repr__(self) -> str:
        return f"stepcast.Trace({self.path!r})"

    def info(self) -> Result:
        """What the trace holds and how its graph was built (``stepcast info --json``)."""
        return _result(self._native.info())

    def replay(self, step: Optional[int] = None, *, progress: Progress = None) -> Result:
        """Every step replayed against the recording (``stepcast replay --json``)."""
        return _result(self._native.replay(step, progress=self._callback(progress)))

    def analyze(
        self,
        step: Optional[int] = None,
        *,
        top: Optional[int] = 20,
        cores: Optional[int] = None,
        threads: Optional[int] = None,
        progress: Progress = None,
    ) -> Result:
        """Where the step's time goes (``stepcast analyze --json``): ``top`` kernels, ops and
        queue latencies in the statistics, ``None`` for every one (``--top all``). It leads
        with ``advise``'s answer, on the host ``cores`` and ``threads`` describe."""
        if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
            raise ValueError(f"top must be a positive number of rows or None, not {top!r}")
        text = self._native.analyze(
            step,
            top,
            _count("cores", cores),
            _count("threads", threads),
            progress=self._callback(progress),
        )
        return _result(text)

    def whatif(
        self,
        model: Optional[str] = None,
        *,
        scenario: Optional[PathLike] = None,
        peers: str = "skew",
        progress: Progress = None,
        **params: Any,
    ) -> Result:
        """The step after an optimization (``stepcast whatif --json``).

        ``model`` is a built-in model (``amp``, ``faster_hardware``...) or ``ddp``; ``params``
        are the command line's options with underscores (``factor=0.5``,
        ``gpus=[8, 16]``, ``gpus_per_node=8``, ``net="100Gbps"``, ``fsdp=True``). A
        ``scenario`` file (TOML) replaces the model.
        """
        for name in ("gpus", "net"):
            if name in params:
                params[name] = _comma_list(params[name])
        if scenario is not None:
            scenario = os.fspath(scenario)
        text = self._native.whatif(
            model, scenario, peers, progress=self._callback(progress), **params
        )
        return _result(text)

    def advise(
        self,
        *,
        peers: str = "skew",
        cores: Optional[int] = None,
        threads: Optional[int] = None,
        progress: Progress = None,
    ) -> Result:
        """Every built-in model and useful combinations, ranked (``stepcast advise --json``).
        ``cores`` and ``threads`` describe the recorded host (``--cores``, ``--threads``: the
        CPU cores the training process shares with its ``DataLoader`` workers, and its
        ``torch.get_num_threads()``), which no trace records."""
        return _result(
            self._native.advise(
                peers,
                _count("cores", cores),
                _count("threads", threads),
                progress=self._callback(progress),
            )
        )

    def export(
        self,
        path: PathLike,
        *,
        step: Optional[int] = None,
        model: Optional[str] = None,
        progress: Progress = None,
    ) -> None:
        """Writes the recorded and the replayed window (or one ``step``) side by side as a
        Chrome trace for ui.perfetto.dev; with ``model``, its predicted window beside them
        (``stepcast export TRACE -o PATH``).

        ``path`` is written as the command line writes ``-o``: a file is replaced whole or
        not at all (keeping its mode), a symlink's target is replaced, a device or a named
        pipe is written into; the trace's own path raises ``StepcastError`` before anything
        is written.
        """
        self._native.export(os.fspath(path), step, model, progress=self._callback(progress))

    def report(
        self,
        path: PathLike,
        *,
        model: Optional[str] = None,
        gpus: Union[str, Iterable[int]] = "1,2,4,8,16,32,64",
        peers: str = "skew",
        cores: Optional[int] = None,
        threads: Optional[int] = None,
        progress: Progress = None,
    ) -> None:
        """Writes the self-contained HTML report of the trace (``stepcast report TRACE -o
        PATH``): ``model`` the what-if drawn (default: ``advise``'s best), ``gpus`` the counts
        of the scaling curve, ``cores`` and ``threads`` the recorded host as ``advise`` takes
        them. ``path`` is written as ``export`` writes it."""
        self._native.report(
            os.fspath(path),
            model,
            _comma_list(gpus),
            peers,
            _count("cores", cores),
            _count("threads", threads),
            progress=self._callback(progress),
        )

    def optimize(
        self,
        memory_budget: Optional[float] = None,
        passes: Union[None, str, Iterable[str]] = None,
        time_limit: float = 60.0,
        peers: str = "skew",
        *,
        progress: Progress = None,
    ) -> Result:
        """The best combination of the optimization passes, as a plan to apply move by move
        (``stepcast optimize --json``).

        ``memory_budget``: device memory the plan must fit in, GiB (default: the device's);
        ``passes``: the passes it may use (names, or one comma-separated string; default: all
        of ``op_fusion``, ``tensor_fusion``, ``tensor_partition``, ``program``, ``memory``);
        ``time_limit``: seconds before the search answers with its best plan so far.
        """
        text = self._native.optimize(
            memory_budget,
            _names(passes),
            time_limit,
            peers,
            progress=self._callback(progress),
        )
        return _result(text)


class Job(_Loaded):
    """The ranks of one job (a folder of traces, or several traces), replayed as one graph."""

    @property
    def files(self) -> list:
        """The trace files, in rank order."""
        return self._native.files

    def __repr__(self) -> str:
        return f"stepcast.Job({len(self.files)} ranks)"

    def replay(self, step: Optional[int] = None, *, progress: Progress = None) -> Result:
        """Every rank replayed as one graph (``stepcast replay DIR --json``)."""
        callback = self._callback(progress)
        return _result(self._native.replay(step, progress=callback))

    def analyze(self, *, top: Optional[int] = 20, progress: Progress = None) -> RankAnalyses:
        """Every rank analyzed on its own (``stepcast analyze RANK_TRACE --json`` of each
        file), by rank: ``to_pandas()`` is one row per rank, ``to_pandas(table)`` a table of
        every rank stacked. The ranks as one graph are ``replay()``'s. Reads each rank's
        trace again (a ``Job`` keeps their graphs only)."""
        analyses = RankAnalyses()
        for index, file in enumerate(self.files):
            trace = load(file, progress=self._progress if progress is None else progress)
            if not isinstance(trace, Trace):
                raise StepcastError(
                    f"{file} holds several processes: analyze them with "
                    "stepcast.load(file).replay(), or export one trace per rank"
                )
            result = trace.analyze(top=top)
            rank = result.get("trace", {}).get("rank")
            analyses[rank if isinstance(rank, int) and rank not in analyses else index] = result
        return analyses

    def whatif(
        self,
        model: Optional[str] = None,
        *,
        scenario: Optional[PathLike] = None,
        peers: str = "skew",
        progress: Progress = None,
        **params: Any,
    ) -> Result:
        """The change on every rank, predicted on the job's global graph (``stepcast whatif
        DIR --json``): the job's step before and after, the ranks that bound it, and what each
        rank's own trace predicts beside it. The parameters are ``Trace.whatif``'s (``ddp``
        predicts from one rank's trace: not here). Reads the rank traces again."""
        if scenario is not None:
            scenario = os.fspath(scenario)
        text = self._native.whatif(
            model, scenario, peers, progress=self._callback(progress), **params
        )
        return _result(text)

    def advise(
        self,
        *,
        peers: str = "skew",
        cores: Optional[int] = None,
        threads: Optional[int] = None,
        progress: Progress = None,
    ) -> Result:
        """Every built-in model and useful combinations on every rank, ranked by the job's
        gain (``stepcast advise DIR --json``), ``cores`` and ``threads`` each rank's host as
        ``Trace.advise`` takes them. Reads the rank traces again."""
        return _result(
            self._native.advise(
                peers,
                _count("cores", cores),
                _count("threads", threads),
                progress=self._callback(progress),
            )
        )

    def optimize(
        self,
        memory_budget: Optional[float] = None,
        passes: Union[None, str, Iterable[str]] = None,
        time_limit: float = 60.0,
        peers: str = "skew",
        *,
        progress: Progress = None,
    ) -> Result:
        """One plan for every rank, checked on each (``stepcast optimize DIR --json``); the
        parameters are ``Trace.optimize``'s. Reads the rank traces again (a ``Job`` keeps
        their graphs only)."""
        callback = self._callback(progress)
        text = self._native.optimize(
            memory_budget, _names(passes), time_limit, peers, progress=callback
        )
        return _result(text)


def load(
    path: Union[PathLike, Sequence[PathLike]],
    *,
    step_range: Optional[str] = None,
    et: Optional[PathLike] = None,
    progress: Progress = None,
) -> Union[Trace, Job]:
    """Reads a trace file (``.json``, ``.json.gz``, rocprofv3 JSON, ``.xplane.pb``, an Nsight
    Systems ``.sqlite`` export) and builds its graph: a ``Trace``.

    A folder of traces, or a list of trace files, one per rank of a job, gives a ``Job``; a
    list of one ``.sqlite`` export of several processes gives a ``Job`` of its processes; a
    folder of reduced ranks (``stepcast reduce``, ``stepcast.distributed.reduce``) gives the
    ``Job`` its traces would.
    ``step_range``: a regular expression; steps are the ranges (NVTX, ROCTx, XPlane host
    events, PyTorch profiler host ops and annotations) whose name it matches
    (the command line's ``--step-range``).
    ``et``: the PyTorch Execution Trace of the same run (the command line's ``--et``): its
    ops are joined with the trace's and the data dependencies it states between threads become
    edges of the graph; one trace only (a ``ValueError`` for a job).
    ``progress``: ``True`` for tqdm bars (when tqdm is installed), or a callable
    ``progress(stage, done, total)``; it stays the default of the object's methods.
    """
    callback = progress_callback(progress)
    is_job = isinstance(path, (list, tuple)) or os.path.isdir(path) or _is_reduced(path)
    if et is not None and is_job:
        raise ValueError(
            f"et={os.fspath(et)!r} joins the Execution Trace of one run with its one trace; "
            "a folder or several traces are a job's ranks"
        )
    if isinstance(path, (list, tuple)):
        paths = [os.fspath(p) for p in path]
        return Job(_native.Job.load(paths, step_range, progress=callback), progress)
    path = os.fspath(path)
    if is_job:
        return Job(_native.Job.load([path], step_range, progress=callback), progress)
    et_path = None if et is None else os.fspath(et)
    return Trace(
        _native.Trace.load(path, step_range, et_path, progress=callback), progress
    )


def _is_reduced(path: str) -> bool:
    """Whether ``path`` is a rank reduced by ``stepcast reduce`` (a ``Job`` of one rank)."""
    try:
        with open(path, "rb") as file:
            return file.read(8) == b"STEPCRNK"
    except OSError:
        return False


def compare(
    before: Union[PathLike, Trace],
    after: Union[PathLike, Trace],
    *,
    models: Iterable[str] = (),
    progress: Progress = None,
    **params: Any,
) -> Result:
    """Two traces of one workload: the measured speedup, what changed, and each of ``models``
    predicted from ``before`` against the measured ``after`` (``stepcast compare --json``).
    ``before`` and ``after`` are paths or loaded traces."""
    if isinstance(models, str):
        models = [models]
    sides = [side if isinstance(side, Trace) else load(side) for side in (before, after)]
    for side in sides:
        if not isinstance(side, Trace):
            raise StepcastError(f"compare takes two traces, not a job folder: {side.files[0]}")
    text = _native.compare(
        sides[0]._native,
        sides[1]._native,
        list(models),
        progress=progress_callback(progress),
        **params,
    )
    return _result(text)


def _names(value: Union[None, str, Iterable[str]]) -> Optional[list]:
    """``passes`` as a list of names: one string is one name or a comma-separated list."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    return list(value)


def _comma_list(value: Any) -> Any:
    """``[8, 16]`` as the command line's ``8,16``; anything else unchanged."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def _count(name: str, value: Optional[int]) -> Optional[int]:
    """A count the command line takes as ``--cores N``: a positive int, or ``None`` (unknown)."""
    if value is None:
        return None
    # The command line's counts are 32-bit: a larger one is refused here, by name, rather
    # than as the native call's overflow.
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 2**32:
        raise ValueError(f"{name} must be a positive count or None, not {value!r}")
    return value
