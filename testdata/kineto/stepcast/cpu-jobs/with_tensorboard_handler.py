"""Runs one of this folder's recording scripts with the profiler set as PyTorch's tutorials
set it: `torch.profiler.tensorboard_trace_handler` writing each profiling window of each rank
to a file of its own (`<host>_<pid>.<ns>.pt.trace.json.gz`, gzipped by the handler) in one
folder, and a schedule that repeats (`wait=1, warmup=1, active=3, repeat=2`: two windows of
three steps per rank).

    python3 with_tensorboard_handler.py TBDIR SCRIPT.py OUTDIR ARGS...

The script's own trace (its last window, under OUTDIR) is written as before; TBDIR gets the
handler's files, two per rank. The patch reaches every process `mp.spawn` starts
(`patched_profiler.py`).
"""

import os
import sys

from patched_profiler import run_patched

PATCH = '''
import os
import shutil

import torch.profiler

_profile_init = torch.profiler.profile.__init__
_export = torch.profiler.profile.export_chrome_trace
_handler = torch.profiler.tensorboard_trace_handler(
    os.environ["STEPCAST_TB_DIR"], use_gzip=True
)


def _export_once(self, path, *args, **kwargs):
    # A window's trace can be saved once: the script's own export copies the handler's file.
    saved = getattr(self, "_stepcast_saved", None)
    if saved is None:
        _export(self, path, *args, **kwargs)
        self._stepcast_saved = path
    else:
        shutil.copyfile(saved, path)


torch.profiler.profile.export_chrome_trace = _export_once


def _init_with_handler(self, *args, **kwargs):
    own = kwargs.get("on_trace_ready")

    def both(prof):
        prof._stepcast_saved = None
        _handler(prof)
        if own is not None:
            own(prof)

    kwargs["on_trace_ready"] = both
    kwargs["schedule"] = torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=2)
    _profile_init(self, *args, **kwargs)


torch.profiler.profile.__init__ = _init_with_handler
'''

if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit("usage: with_tensorboard_handler.py TBDIR SCRIPT.py OUTDIR ARGS...")
    tb_dir = os.path.abspath(sys.argv[1])
    os.makedirs(tb_dir, exist_ok=True)
    sys.exit(run_patched(PATCH, sys.argv[2:], {"STEPCAST_TB_DIR": tb_dir}))
