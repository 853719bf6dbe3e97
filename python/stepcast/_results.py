"""A command's JSON document as a dict, and its tables as pandas DataFrames: the very tables
``--format csv`` writes (one per file), read from the same code."""

from __future__ import annotations

import io
import json
from typing import Any, Dict, List, Optional, Tuple

# The table `to_pandas()` gives without a name, by document (its `schema` without version).
_DEFAULT_TABLE = {
    "stepcast.info": "steps",
    "stepcast.replay": "steps",
    "stepcast.replay-ranks": "ranks",
    "stepcast.analyze": "steps",
    "stepcast.whatif": "phases",
    "stepcast.advise": "candidates",
    "stepcast.compare": "kernels.rows",
}


class Result(dict):
    """A ``stepcast ... --json`` document: a plain dict (``==`` to the parsed JSON), plus
    ``tables()`` and ``to_pandas()``, ``plot()`` (with matplotlib: ``plot_kinds()`` lists what
    the document can draw), a short ``repr`` and an HTML one for notebooks."""

    _text: Optional[str] = None
    _csv: Optional[List[Tuple[str, str]]] = None

    @classmethod
    def from_json(cls, text: str) -> "Result":
        """The document of ``text`` (a command's ``--json`` output)."""
        result = cls(json.loads(text))
        result._text = text
        return result

    @property
    def schema(self) -> str:
        """The document's kind and version, e.g. ``stepcast.analyze/1``."""
        return self.get("schema", "")

    @property
    def answer(self) -> Optional[str]:
        """The sentence every output leads with (``analyze`` and ``advise``), if any."""
        answer = self.get("answer")
        return answer.get("sentence") if isinstance(answer, dict) else None

    def _tables_csv(self) -> List[Tuple[str, str]]:
        if self._csv is None:
            from . import _native

            text = self._text if self._text is not None else json.dumps(self)
            self._csv = _native.csv_tables(text)
        return self._csv

    def tables(self) -> List[str]:
        """The names of the document's tables, as ``--format csv`` names its files
        (``statistics.top_kernels`` for ``statistics.top_kernels.csv``; ``summary`` holds
        the scalars): the names ``to_pandas`` takes."""
        return [name for name, _ in self._tables_csv()]

    def to_pandas(self, table: Optional[str] = None) -> Any:
        """One table as a ``pandas.DataFrame``, the same as its CSV file: a row per record,
        nested fields as dotted columns, every time in ns (``_ns`` columns). ``table`` is a
        name from ``tables()``; by default the document's main one (the steps of ``replay``
        and ``analyze``, the candidates of ``advise``...). Needs pandas."""
        try:
            import pandas
        except ImportError as error:
            raise ImportError(
                "to_pandas needs pandas: pip install pandas (or stepcast[pandas])"
            ) from error
        tables = self._tables_csv()
        if table is None:
            table = _DEFAULT_TABLE.get(self.schema.split("/")[0])
            if table is None or table not in dict(tables):
                named = [name for name, _ in tables if name != "summary"]
                if not named:
                    raise KeyError(f"{self.schema} has no table")
                table = named[0]
        text = dict(tables).get(table)
        if text is None:
            names = [name for name, _ in tables]
            if _has_path(self, table):
                raise KeyError(f"{table} is not a table of {self.schema}; its tables: {names}")
            raise KeyError(f"{table} is not in the document; its tables: {names}")
        return pandas.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])

    def plot_kinds(self) -> List[str]:
        """The plots ``plot(kind)`` can draw from this document, its default first: ``analyze``
        ``phases``, ``idle``, ``timeline``; ``whatif("ddp", gpus=[...])`` ``scaling``;
        ``advise`` ``candidates``. Empty where none applies."""
        from . import _plots

        return _plots.kinds(self)

    def plot(self, kind: Optional[str] = None, ax: Any = None) -> Any:
        """Draws the document with matplotlib into ``ax`` (a new figure when ``None``) and
        returns the Axes; ``kind`` is one of ``plot_kinds()`` (default: the first). Raises
        ``ValueError`` naming the kinds when ``kind`` does not apply. Needs matplotlib."""
        from . import _plots

        return _plots.plot(self, kind, ax)

    def __repr__(self) -> str:
        tables = [name for name, _ in self._tables_csv()]
        shown = ", ".join(tables[:6]) + (f", … ({len(tables)} in all)" if len(tables) > 6 else "")
        answer = self.answer
        head = f"stepcast.Result({self.schema}"
        if answer:
            head += f": {answer[:160]}{'…' if len(answer) > 160 else ''}"
        return f"{head}; tables: {shown})"

    def _repr_html_(self) -> str:
        import html

        tables = self.tables()
        answer = self.answer
        parts = [f"<p><b>{html.escape(self.schema)}</b></p>"]
        if answer:
            parts.append(f"<p>{html.escape(answer)}</p>")
        parts.append(
            "<p>Tables (<code>to_pandas(name)</code>): "
            + ", ".join(f"<code>{html.escape(name)}</code>" for name in tables)
            + "</p>"
        )
        return "".join(parts)


def _has_path(document: Dict[str, Any], path: str) -> bool:
    value: Any = document
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return False
        value = value[key]
    return True
