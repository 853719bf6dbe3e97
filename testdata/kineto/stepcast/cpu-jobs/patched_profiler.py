"""Runs a recording script of this folder with `torch.profiler` patched in every process it
starts: `mp.spawn` starts each rank as a fresh interpreter, so the patch is a `sitecustomize`
module (in a temporary directory put first on `PYTHONPATH`), which every one of them imports
at startup. Used by `without_shapes.py` and `with_tensorboard_handler.py`.
"""

import os
import subprocess
import sys
import tempfile


def run_patched(patch, command, env=None):
    """Runs `command` (a list: the interpreter's arguments) with `patch` (Python source) as its
    `sitecustomize`, and `env` added to the environment; returns its exit status."""
    with tempfile.TemporaryDirectory() as patch_dir:
        with open(os.path.join(patch_dir, "sitecustomize.py"), "w") as f:
            f.write(patch)
        path = [patch_dir] + [p for p in [os.environ.get("PYTHONPATH")] if p]
        full_env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), **(env or {}))
        return subprocess.call([sys.executable, *command], env=full_env)
