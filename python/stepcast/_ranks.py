"""A job's ranks analyzed one by one: ``Job.analyze()``. Each rank's document is the one
``stepcast analyze RANK_TRACE --json`` gives; their tables stack into one frame per table,
one row per rank and record (a ``rank`` column first)."""

from __future__ import annotations

from typing import Any, Dict, List

from ._results import Result


class RankAnalyses(Dict[int, Result]):
    """``analyze`` of every rank of a job, by rank: a dict of ``Result`` documents, plus
    frames that stack their tables (``to_pandas``) and the answer of each rank."""

    @property
    def ranks(self) -> List[int]:
        """The ranks, in order."""
        return sorted(self)

    def answers(self) -> Dict[int, str]:
        """Each rank's answer sentence (what bounds its step, what to change)."""
        return {rank: self[rank].answer or "" for rank in self.ranks}

    def tables(self) -> List[str]:
        """The tables any rank's document has (the names ``to_pandas`` takes)."""
        names: List[str] = []
        for rank in self.ranks:
            for name in self[rank].tables():
                if name not in names:
                    names.append(name)
        return names

    def to_pandas(self, table: str = "summary") -> Any:
        """One table of every rank stacked, a ``rank`` column first. ``summary`` (the
        default) is one row per rank, one column per scalar of its document (the step time,
        the bound, the breakdowns of the typical step...); another table is its rows of every
        rank. Needs pandas."""
        import pandas

        frames = []
        for rank in self.ranks:
            document = self[rank]
            if table not in document.tables():
                continue
            frame = document.to_pandas(table)
            if table == "summary":
                frame = frame.set_index("field").T.reset_index(drop=True)
                frame.columns.name = None
                # A column of the long table held numbers and words alike; each is one now.
                for column in frame.columns:
                    try:
                        frame[column] = pandas.to_numeric(frame[column])
                    except (ValueError, TypeError):
                        pass
            frame.insert(0, "rank", rank)
            frames.append(frame)
        if not frames:
            raise KeyError(f"{table} is a table of no rank; their tables: {self.tables()}")
        return pandas.concat(frames, ignore_index=True)

    def __repr__(self) -> str:
        return f"stepcast.RankAnalyses({len(self)} ranks; to_pandas() gives one row per rank)"

    def _repr_html_(self) -> str:
        import html

        rows = "".join(
            f"<tr><td>{rank}</td><td>{html.escape(answer)}</td></tr>"
            for rank, answer in self.answers().items()
        )
        return f"<table><tr><th>rank</th><th>answer</th></tr>{rows}</table>"
