"""Runs one of this folder's recording scripts with the PyTorch profiler's `record_shapes`
off, as a user who does not ask for shapes records (the profiler's default): no `Input Dims`
on any op or `gloo:` range, so no collective's size is in the trace.

    python3 without_shapes.py SCRIPT.py OUTDIR ARGS...

`mp.spawn` starts each rank as a fresh interpreter, so the patch is a `sitecustomize` module
(in a temporary directory put first on `PYTHONPATH`), which every one of them imports at
startup. The folders are those SCRIPT writes; rename them (this folder's copies end in
`-noshapes`).
"""

import os
import subprocess
import sys
import tempfile

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
    with tempfile.TemporaryDirectory() as patch_dir:
        with open(os.path.join(patch_dir, "sitecustomize.py"), "w") as f:
            f.write(PATCH)
        path = [patch_dir] + [p for p in [os.environ.get("PYTHONPATH")] if p]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
        sys.exit(subprocess.call([sys.executable, *sys.argv[1:]], env=env))
