"""Jobs larger than one machine: every rank reduced on a Dask cluster, one global replay here.

The per-rank work of ``stepcast replay DIR`` (read the trace, build its graph, map it) is
independent from rank to rank; only the replay of the job as one graph needs every rank, and
it needs their compact graphs (``stepcast reduce``), not their traces. So each rank is reduced
on a worker (one task per trace, retried on a lost worker), the reduced ranks come back here
(or are written to a shared folder), and the job is replayed from them: the document is the
one ``stepcast replay DIR --json`` gives, and this process never holds a trace.

    from dask.distributed import Client
    import stepcast.distributed

    client = Client(scheduler_file="/shared/scheduler.json")  # an existing cluster
    result = stepcast.distributed.replay("/shared/job/*.json.gz", client)

Without a client, a ``LocalCluster`` of this machine is started for the call and closed
after. Needs ``pip install "./python[dask]"`` (dask and distributed).
"""

from __future__ import annotations

import glob
import os
import re
import tempfile
import uuid
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _native
from ._native import StepcastError
from ._progress import Progress, progress_callback
from ._results import Result

__all__ = ["reduce", "replay"]

_EXTENSION = _native.REDUCED_EXTENSION

PathLike = Union[str, "os.PathLike[str]"]


def replay(
    paths: Union[PathLike, Sequence[PathLike]],
    client: Any = None,
    *,
    output: Optional[PathLike] = None,
    step: Optional[int] = None,
    step_range: Optional[str] = None,
    skip_unreadable: bool = False,
    retries: int = 2,
    progress: Progress = None,
) -> Result:
    """Every rank of one job replayed as one graph, the ranks reduced on ``client``'s workers:
    ``stepcast replay DIR --json``'s document (``--skip-unreadable`` for ``skip_unreadable``).

    ``paths``: trace files, directories of them, or glob patterns, on a file system every
    worker sees. ``client``: a ``dask.distributed.Client``; ``None`` starts a ``LocalCluster``.
    ``output``: a folder every worker sees to keep the reduced ranks in (the workers write
    them there, as ``stepcast reduce -o`` would, and a later ``stepcast replay output`` reads
    them); by default they come back through Dask into a temporary folder of this process,
    dropped after the replay. ``retries``: how often a rank's task is run again when its
    worker is lost. ``progress``: as ``stepcast.load``'s."""
    callback = progress_callback(progress)
    with _reduced_folder(output) as folder:
        skipped, unmatched = _reduce(
            paths,
            client,
            folder,
            # A cluster of this machine (none given) sees the temporary folder too.
            workers_write=output is not None or client is None,
            step_range=step_range,
            skip_unreadable=skip_unreadable,
            retries=retries,
            callback=callback,
        )
        # The files left out were never reduced, so the folder does not know them: the job is
        # told, and its document lists them as `replay --skip-unreadable` does.
        # So are the Execution Traces given that no rank's process matched.
        job = _native.Job.load(
            [folder],
            step_range,
            progress=callback,
            unreadable=skipped,
            ets_unmatched=unmatched,
        )
        return Result.from_json(job.replay(step, progress=callback))


def reduce(
    paths: Union[PathLike, Sequence[PathLike]],
    client: Any = None,
    *,
    output: PathLike,
    step_range: Optional[str] = None,
    skip_unreadable: bool = False,
    retries: int = 2,
    progress: Progress = None,
) -> List[Tuple[str, str]]:
    """``stepcast reduce`` on ``client``'s workers: each trace ``paths`` names is reduced by
    one task, which writes its ranks into the folder ``output`` (one every worker sees; made
    if new; each file written whole, then renamed into place). Answers the traces left out
    under ``skip_unreadable`` as ``(file, reason)``; without it the first unreadable trace (in
    name order) raises ``StepcastError`` naming it, and the files this call wrote are
    removed. Execution Traces among ``paths`` are joined with the rank of their process (as
    ``stepcast reduce`` joins them)."""
    skipped, _ = _reduce(
        paths,
        client,
        os.fspath(output),
        workers_write=True,
        step_range=step_range,
        skip_unreadable=skip_unreadable,
        retries=retries,
        callback=progress_callback(progress),
    )
    return skipped


def _reduce(
    paths: Union[PathLike, Sequence[PathLike]],
    client: Any,
    output: str,
    *,
    workers_write: bool,
    step_range: Optional[str],
    skip_unreadable: bool,
    retries: int,
    callback: Any,
) -> Tuple[List[Tuple[str, str]], List[str]]:
    """The traces left out (``skip_unreadable``) and the Execution Traces no rank matched."""
    files, et_files = _native.job_inputs(_expand(paths))
    _check_output(files, output)
    skipped: List[Tuple[str, str]] = []
    written: List[str] = []
    joined: List[int] = []
    errors: Dict[int, str] = {}
    with _client(client) as dask_client:
        from dask.distributed import as_completed

        ets = _et_processes(dask_client, et_files, retries)
        futures = {
            dask_client.submit(
                _reduce_one,
                file,
                step_range,
                output if workers_write else None,
                ets,
                key=f"stepcast-reduce-{index}-{uuid.uuid4().hex}",
                retries=retries,
                pure=False,
            ): index
            for index, file in enumerate(files)
        }
        if callback is not None:
            callback("reducing ranks", 0, len(files))
        # Each rank is written (or its names noted) as it arrives and its future released, so
        # this process holds one rank's bytes at a time, never the job's.
        for done, future in enumerate(as_completed(list(futures)), 1):
            kind, value = future.result()
            index = futures.pop(future)
            future.release()
            if kind == "error":
                errors[index] = value
            elif kind == "written":
                for name, et_process in value:
                    written.append(name)
                    joined.extend([] if et_process is None else [et_process])
            else:
                for name, data, et_process in value:
                    _write_whole(os.path.join(output, name), data)
                    written.append(name)
                    joined.extend([] if et_process is None else [et_process])
            del value
            if callback is not None:
                callback("reducing ranks", done, len(files))
    refused = None
    for index in sorted(errors):
        if not skip_unreadable:
            refused = errors[index]
            break
        skipped.append((files[index], errors[index]))
    if refused is not None or not written:
        # All or nothing: what this call wrote goes.
        for name in written:
            os.remove(os.path.join(output, name))
        raise StepcastError(refused or f"none of the {len(files)} traces given could be read")
    unmatched = sorted(path for pid, path in ets.items() if pid not in joined)
    return skipped, unmatched


def _et_processes(dask_client: Any, et_files: List[str], retries: int) -> Dict[int, str]:
    """The job's Execution Traces by the process each observed, each read by one task on a
    worker (never here); two of one process, or one that records none, is an error naming
    them, as ``stepcast replay`` says it."""
    if not et_files:
        return {}
    futures = [
        dask_client.submit(_native_et_process, path, retries=retries, pure=False)
        for path in et_files
    ]
    by_process: Dict[int, str] = {}
    for path, (kind, value) in sorted(zip(et_files, dask_client.gather(futures))):
        if kind == "error":
            raise StepcastError(value)
        if value in by_process:
            raise StepcastError(
                f"{by_process[value]} and {path} are Execution Traces of one process "
                f"({value}); give one per rank"
            )
        by_process[value] = path
    return by_process


def _native_et_process(path: str) -> Tuple[str, Any]:
    """One task: the process an Execution Trace observed, or ``("error", message)``."""
    from stepcast import _native as native

    try:
        return ("process", native.execution_trace_process(path))
    except native.StepcastError as error:
        return ("error", str(error))


def _check_output(files: List[str], output: str) -> None:
    """Before any work: two traces of one file name would write the same reduced rank, and a
    folder already holding reduced ranks of other traces would be read as part of this job."""
    names: Dict[str, str] = {}
    for file in files:
        name = os.path.basename(file)
        if name in names:
            raise StepcastError(
                f"{names[name]} and {file} would both be reduced to {name}.{_EXTENSION}; reduce "
                "traces of the same file name into different folders"
            )
        names[name] = file
    os.makedirs(output, exist_ok=True)
    ours = re.compile(
        "(" + "|".join(re.escape(name) for name in names) + r")(\.\d+)?\." + re.escape(_EXTENSION)
    )
    strays = sorted(
        entry
        for entry in os.listdir(output)
        if entry.endswith("." + _EXTENSION) and not ours.fullmatch(entry)
    )
    if strays:
        raise StepcastError(
            f"{output} already holds reduced ranks of other traces ({strays[0]}"
            f"{', ...' if len(strays) > 1 else ''}); give a new or empty folder"
        )


def _reduce_one(
    path: str, step_range: Optional[str], output: Optional[str], ets: Dict[int, str]
) -> Tuple[str, Any]:
    """One task: a trace reduced (joined with the ET of its process among ``ets``), its ranks
    written into ``output`` (``("written", [(name, ET process)])``) or handed back
    (``("ranks", [(name, bytes, ET process)])``); ``("error", message)`` for a trace that
    cannot be read (not retried: it would fail again)."""
    from stepcast import _native as native

    try:
        ranks = native.reduce_trace(path, step_range, ets)
    except native.StepcastError as error:
        return ("error", str(error))
    if output is None:
        return ("ranks", ranks)
    for name, data, _ in ranks:
        _write_whole(os.path.join(output, name), data)
    return ("written", [(name, et_process) for name, _, et_process in ranks])


def _expand(paths: Union[PathLike, Sequence[PathLike]]) -> List[str]:
    """Paths as given, glob patterns expanded (sorted); a pattern that matches nothing is an
    error naming it."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    expanded: List[str] = []
    for path in paths:
        text = os.fspath(path)
        if glob.has_magic(text):
            matches = sorted(glob.glob(text))
            if not matches:
                raise StepcastError(f"{text} matches no file")
            expanded.extend(matches)
        else:
            expanded.append(text)
    if not expanded:
        raise StepcastError("no trace given")
    return expanded


def _write_whole(path: str, data: bytes) -> None:
    """``data`` at ``path``, whole or not at all: written beside it, then renamed over it."""
    temporary = f"{path}.{uuid.uuid4().hex}.tmp"
    try:
        with open(temporary, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


class _client:
    """The client given, or a ``LocalCluster`` of this machine for the duration."""

    def __init__(self, client: Any) -> None:
        self._given = client
        self._cluster: Any = None
        self._client: Any = None

    def __enter__(self) -> Any:
        if self._given is not None:
            return self._given
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError as error:
            raise StepcastError(
                'stepcast.distributed needs dask and distributed: pip install "stepcast[dask]"'
            ) from error
        self._cluster = LocalCluster(processes=True, threads_per_worker=1, dashboard_address=":0")
        self._client = Client(self._cluster)
        return self._client

    def __exit__(self, *_: Any) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()


class _reduced_folder:
    """``output`` if given, else a temporary folder removed on exit."""

    def __init__(self, output: Optional[PathLike]) -> None:
        self._output = output
        self._temporary: Optional[tempfile.TemporaryDirectory] = None

    def __enter__(self) -> str:
        if self._output is not None:
            return os.fspath(self._output)
        self._temporary = tempfile.TemporaryDirectory(prefix="stepcast-reduced-")
        return self._temporary.name

    def __exit__(self, *_: Any) -> None:
        if self._temporary is not None:
            self._temporary.cleanup()
