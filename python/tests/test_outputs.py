"""What the package writes (``Trace.export``, ``Trace.report``) follows the command line's
rules, through the same Rust code (issue 32): the trace's own path is refused and left as it
was, a device or a named pipe is written into, a symlink's target is replaced and the link
kept, a file replaced keeps its mode. The files are the CLI's, byte for byte."""

from __future__ import annotations

import os
import shutil
import stat
import threading

import pytest

import stepcast
from conftest import NCCL, run_cli


@pytest.fixture(scope="module")
def trace():
    return stepcast.load(NCCL)


def test_export_is_the_clis(tmp_path, trace):
    out = tmp_path / "export.json"
    trace.export(out, step=None)
    done = run_cli("export", NCCL, "-o", tmp_path / "cli.json")
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == (tmp_path / "cli.json").read_bytes()


@pytest.mark.parametrize("write", ["export", "report"])
def test_the_input_is_never_written(tmp_path, write):
    copy = tmp_path / "t.json.gz"
    shutil.copy(NCCL, copy)
    before = copy.read_bytes()
    loaded = stepcast.load(copy)
    link = tmp_path / "link.json.gz"
    link.symlink_to(copy)
    for target in (copy, str(copy), link):
        with pytest.raises(stepcast.StepcastError) as error:
            getattr(loaded, write)(target)
        message = str(error.value)
        assert str(target) in message
        assert "is an input of this command" in message
        # The CLI refuses the same way, with the same line.
        done = run_cli(write, copy, "-o", target)
        assert done.returncode == 1
        assert done.stderr.strip() == f"stepcast: error: {message}"
    assert copy.read_bytes() == before
    assert link.is_symlink()


def test_dev_null_stays_a_device(trace):
    trace.export("/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_named_pipe_is_streamed_into(tmp_path, trace):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    try:
        trace.export(fifo)
    finally:
        # The reader may still be reading when export returns: wait for it first. Opening the
        # write end while it finishes would wait forever for a reader that is gone.
        reader.join(timeout=60)
        if reader.is_alive():
            # export never opened the pipe and the reader waits in open(): a write end that
            # does not wait for a partner lets it see the end of the file.
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            reader.join()
    assert got[0].startswith(b"{")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_symlink_is_followed_and_its_target_keeps_its_mode(tmp_path, trace):
    real = tmp_path / "real.html"
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "report.html"
    link.symlink_to("real.html")
    trace.report(link, gpus=[1, 2])
    assert link.is_symlink()
    assert real.read_text().startswith("<!DOCTYPE html>")
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["real.html", "report.html"]


def test_a_directory_is_refused(tmp_path, trace):
    with pytest.raises(stepcast.StepcastError, match="is a directory"):
        trace.export(tmp_path)
    assert list(tmp_path.iterdir()) == []
