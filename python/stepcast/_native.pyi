# Types of the native module (crates/stepcast-py); every method answers a `--json` document
# as JSON text, which the package parses.
from typing import Any, Callable, Dict, List, Optional, Tuple

ProgressCallback = Optional[Callable[[str, int, int], Any]]

class StepcastError(Exception): ...

class Trace:
    @staticmethod
    def load(
        path: str,
        step_range: Optional[str] = None,
        et: Optional[str] = None,
        progress: ProgressCallback = None,
    ) -> Trace: ...
    @property
    def path(self) -> str: ...
    def info(self) -> str: ...
    def replay(self, step: Optional[int] = None, progress: ProgressCallback = None) -> str: ...
    def analyze(
        self, step: Optional[int] = None, top: Optional[int] = None, progress: ProgressCallback = None
    ) -> str: ...
    def whatif(
        self,
        model: Optional[str] = None,
        scenario: Optional[str] = None,
        peers: str = "skew",
        progress: ProgressCallback = None,
        **params: Any,
    ) -> str: ...
    def advise(self, peers: str = "skew", progress: ProgressCallback = None) -> str: ...
    def export(
        self,
        path: str,
        step: Optional[int] = None,
        model: Optional[str] = None,
        progress: ProgressCallback = None,
    ) -> None: ...
    def report(
        self,
        path: str,
        model: Optional[str] = None,
        gpus: str = "1,2,4,8,16,32,64",
        peers: str = "skew",
        progress: ProgressCallback = None,
    ) -> None: ...
    def optimize(
        self,
        memory_budget: Optional[float] = None,
        passes: Optional[List[str]] = None,
        time_limit: float = 60.0,
        peers: str = "skew",
        progress: ProgressCallback = None,
    ) -> str: ...

class Job:
    @staticmethod
    def load(
        paths: List[str],
        step_range: Optional[str] = None,
        skip_unreadable: bool = False,
        progress: ProgressCallback = None,
        unreadable: List[Tuple[str, str]] = ...,
        ets_unmatched: List[str] = ...,
    ) -> Job: ...
    @property
    def files(self) -> List[str]: ...
    def replay(self, step: Optional[int] = None, progress: ProgressCallback = None) -> str: ...
    def whatif(
        self,
        model: Optional[str] = None,
        scenario: Optional[str] = None,
        peers: str = "skew",
        progress: ProgressCallback = None,
        **params: Any,
    ) -> str: ...
    def advise(self, peers: str = "skew", progress: ProgressCallback = None) -> str: ...
    def optimize(
        self,
        memory_budget: Optional[float] = None,
        passes: Optional[List[str]] = None,
        time_limit: float = 60.0,
        peers: str = "skew",
        progress: ProgressCallback = None,
    ) -> str: ...

REDUCED_EXTENSION: str

def reduce_trace(
    path: str, step_range: Optional[str] = None, ets: Optional[Dict[int, str]] = None
) -> List[Tuple[str, bytes, Optional[int]]]: ...
def rank_files(paths: List[str]) -> List[str]: ...
def job_inputs(paths: List[str]) -> Tuple[List[str], List[str]]: ...
def execution_trace_process(path: str) -> int: ...
def compare(
    before: Trace,
    after: Trace,
    models: List[str] = ...,
    progress: ProgressCallback = None,
    **params: Any,
) -> str: ...
