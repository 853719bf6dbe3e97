"""Progress: the native module calls ``callback(stage, done, total)`` from the working thread;
this turns the user's ``progress`` argument into that callback."""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional, Union

Progress = Union[None, bool, Callable[[str, int, int], Any]]


def progress_callback(progress: Progress) -> Optional[Callable[[str, int, int], Any]]:
    """``None``/``False``: none. ``True``: a tqdm bar per stage when tqdm is installed, none
    otherwise (progress is a nicety, never a reason to fail). A callable: itself."""
    if progress is None or progress is False:
        return None
    if progress is True:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return None
        return _Bars(tqdm)
    if callable(progress):
        return progress
    raise TypeError(f"progress must be None, a bool or a callable, not {type(progress).__name__}")


class _Bars:
    """One tqdm bar per stage, closed when the stage is done."""

    def __init__(self, tqdm: Any) -> None:
        self._tqdm = tqdm
        self._bar: Any = None
        self._stage: Optional[str] = None
        # Updates may come from several worker threads.
        self._lock = threading.Lock()

    def __call__(self, stage: str, done: int, total: int) -> None:
        with self._lock:
            if stage != self._stage:
                if self._bar is not None:
                    self._bar.close()
                self._bar = self._tqdm(total=total, desc=stage, leave=False)
                self._stage = stage
            self._bar.n = done
            self._bar.refresh()
            if done >= total:
                self._bar.close()
                self._bar = None
                self._stage = None
