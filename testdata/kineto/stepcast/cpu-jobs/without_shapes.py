"""Runs one of this folder's recording scripts with the PyTorch profiler's `record_shapes`
off, as a user who does not ask for shapes records (the profiler's default): no `Input Dims`
on any op or `gloo:` range, so no collective's size is in the trace.

    python3 without_shapes.py SCRIPT.py OUTDIR ARGS...

The patch reaches every process `mp.spawn` starts (`patched_profiler.py`). The folders are
those SCRIPT writes; rename them (this folder's copies end in `-noshapes`).
"""

import sys

from patched_profiler import run_patched

PATCH = '''
import torch.profiler

_profile_init = torch.profiler.profile.__init__


def _init_without_shapes(self, *args, **kwargs):
    kwargs["record_shapes"] = False
    _profile_init(self, *args, **kwargs)


torch.profiler.profile.__init__ = _init_without_shapes
'''

if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: without_shapes.py SCRIPT.py OUTDIR ARGS...")
    sys.exit(run_patched(PATCH, sys.argv[1:]))
